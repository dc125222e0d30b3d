"""Package managers are bound by what they read (console/contract/package_managers.py),
with the fixed fake host: manifests, config and lockfiles, the script they run, and the
reasons they cannot be bound otherwise."""

from __future__ import annotations

import json

import pytest
from support.fakehost import FakeHost

from console.contract import package_managers as pm
from console.contract.operation import parse

W = "/home/dev/project"
PACKAGE = json.dumps(
    {
        "scripts": {
            "pretest": "eslint .",
            "test": "jest --ci && node ./scripts/check.js",
            "lint": "sh ./lint.sh",
        }
    }
)
FILES = {
    f"{W}/package.json": PACKAGE,
    f"{W}/scripts/check.js": "check()\n",
    f"{W}/lint.sh": "echo lint\n",
    f"{W}/node_modules/.bin/jest": "#!/usr/bin/env node\n",
    f"{W}/pyproject.toml": '[build-system]\nrequires = ["setuptools"]\n',
    f"{W}/setup.py": "setup()\n",
    f"{W}/uv.lock": "version = 1\n",
    f"{W}/.venv/bin/pytest": "#!/home/dev/project/.venv/bin/python\n",
    f"{W}/Cargo.toml": '[package]\nname = "x"\nbuild = "gen/build.rs"\n',
    f"{W}/gen/build.rs": "fn main() {}\n",
    f"{W}/go.mod": "module x\n",
    f"{W}/gen.go": "package x\n//go:generate sh ./gen.sh\n",
    f"{W}/plain.go": "package x\n",
    f"{W}/gen.sh": "echo gen\n",
    "/usr/lib/node_modules/npm/bin/npm-cli.js": "#!/usr/bin/env node\n",
    "/home/dev/.cargo/bin/rustup": "\x7fELF",
}


def bound(executable: str, *args: str, files: dict[str, str] | None = None) -> tuple[dict, tuple]:
    op = parse(
        {"kind": "process", "executable": executable, "args": list(args), "workspace_root": W},
        FakeHost(FILES if files is None else files),
    )
    return dict(op.content), op.unbound


@pytest.mark.parametrize("exe", ["/usr/bin/npm", "/usr/lib/node_modules/npm/bin/npm-cli.js"])
def test_npm_test_binds_the_manifest_its_config_and_the_scripts_it_runs(exe):
    content, unbound = bound(exe, "test")
    assert content[f"{W}/package.json"] is not None
    for absent in (".npmrc", ".yarnrc.yml", ".pnp.cjs", ".pnpmfile.cjs"):
        assert content[f"{W}/{absent}"] is None, absent  # creating it changes the fingerprint
    assert content[f"{W}/node_modules/.bin/jest"] is not None  # the script's command, from .bin
    assert content[f"{W}/scripts/check.js"] is not None  # the file the script names
    assert f"{W}/node_modules/.bin/eslint" in content  # pretest runs too; absent until installed
    assert unbound == ()


def test_npm_run_follows_the_named_script_and_its_shell_script():
    content, _ = bound("/usr/bin/npm", "run", "lint")
    assert content[f"{W}/lint.sh"] is not None


def test_a_changed_script_or_a_new_npmrc_is_a_new_fingerprint():
    def fp(files):
        return parse(
            {"kind": "process", "executable": "/usr/bin/npm", "args": ["test"], "workspace_root": W},
            FakeHost(files),
        ).fingerprint

    before = fp(FILES)
    assert fp({**FILES, f"{W}/package.json": PACKAGE.replace("--ci", "--ci --runInBand")}) != before
    assert fp({**FILES, f"{W}/.npmrc": "node-options=--require ./evil.js\n"}) != before


def test_npx_of_a_package_not_installed_is_unbound():
    content, unbound = bound("/usr/bin/npx", "cowsay", "hi")
    assert pm.NPX_FETCH in unbound
    assert content[f"{W}/node_modules/.bin/cowsay"] is None
    content, unbound = bound("/usr/bin/npx", "jest")
    assert unbound == () and content[f"{W}/node_modules/.bin/jest"] is not None


def test_npm_install_says_what_it_cannot_bind():
    assert pm.INSTALL_SCRIPTS in bound("/usr/bin/npm", "install")[1]
    assert pm.INSTALL_SCRIPTS not in bound("/usr/bin/npm", "ci", "--ignore-scripts")[1]


@pytest.mark.parametrize(("exe", "args"), [("/usr/bin/yarn", ("test",)), ("/usr/bin/pnpm", ("run", "test"))])
def test_yarn_and_pnpm_bind_like_npm(exe, args):
    content, _ = bound(exe, *args)
    assert content[f"{W}/package.json"] is not None and f"{W}/.yarnrc.yml" in content
    assert content[f"{W}/node_modules/.bin/jest"] is not None


@pytest.mark.parametrize(
    "argv",
    [
        ("/usr/bin/pip", "install", "-e", "."),
        ("/usr/bin/pip3", "install", "."),
        ("/usr/bin/python3", "-m", "pip", "install", "."),
    ],
)
def test_pip_install_of_a_directory_binds_its_build_files(argv):
    content, _ = bound(*argv)
    assert content[f"{W}/pyproject.toml"] is not None and content[f"{W}/setup.py"] is not None
    assert content[f"{W}/setup.cfg"] is None


def test_an_in_tree_build_backend_is_unbound():
    files = {**FILES, f"{W}/pyproject.toml": '[build-system]\nbackend-path = ["_build"]\n'}
    assert pm.BUILD_BACKEND in bound("/usr/bin/pip", "install", ".", files=files)[1]


def test_uv_run_binds_the_project_and_the_venv_command():
    content, unbound = bound("/usr/bin/uv", "run", "pytest", "-q")
    assert content[f"{W}/pyproject.toml"] is not None and content[f"{W}/uv.lock"] is not None
    assert content[f"{W}/.venv/bin/pytest"] is not None and unbound == ()
    assert pm.VENV_COMMAND in bound("/usr/bin/poetry", "run", "mytool")[1]


def test_cargo_binds_the_manifest_build_script_lock_toolchain_and_config():
    content, _ = bound("/usr/bin/cargo", "test")
    assert content[f"{W}/Cargo.toml"] is not None and content[f"{W}/gen/build.rs"] is not None
    for absent in ("Cargo.lock", "rust-toolchain.toml", ".cargo/config.toml"):
        assert f"{W}/{absent}" in content, absent


def test_a_rustup_proxy_is_unbound():
    assert pm.RUSTUP_PROXY in bound("/home/dev/.cargo/bin/rustup", "build", files=FILES)[1]


def test_go_generate_binds_the_files_with_directives_and_follows_them():
    content, _ = bound("/usr/bin/go", "generate")
    assert content[f"{W}/go.mod"] is not None and content[f"{W}/gen.go"] is not None
    assert content[f"{W}/gen.sh"] is not None  # the directive's script
    assert pm.GO_PATTERN in bound("/usr/bin/go", "generate", "./...")[1]
