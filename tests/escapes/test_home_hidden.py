"""Finding 7: a sandboxed command cannot read the operator's home, only the workspace in it."""

from __future__ import annotations

import shutil

import pytest
from sandbox_escape_helpers import config, op, real_dir, run

from console.policy.config import PolicyError, policy_from_toml

pytestmark = pytest.mark.needs_bwrap


@pytest.fixture
def home():
    base = real_dir("ac-home-")
    home = base / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret\n")
    (home / ".gitconfig").write_text("[user]\n\tname = me\n")
    (home / ".bash_history").write_text("export TOKEN=x\n")
    (home / "proj").mkdir()
    (home / "proj" / "README").write_text("hello\n")
    try:
        yield base, home
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_cat_ssh_key_fails_inside_the_sandbox_while_the_workspace_in_home_works(home):
    base, home_dir = home
    ws = home_dir / "proj"
    cfg = config(base, home=str(home_dir))
    result = run(
        op(ws, "cat ~/.ssh/id_rsa; cat ~/.aws/credentials; cat ~/.bash_history; cat README; touch made"), cfg
    )
    assert "PRIVATE KEY" not in result.stdout
    assert "aws_secret" not in result.stdout and "TOKEN" not in result.stdout
    assert "hello" in result.stdout
    assert (ws / "made").exists()


def test_readable_shows_a_home_file_read_only(home):
    base, home_dir = home
    ws = home_dir / "proj"
    cfg = config(base, home=str(home_dir), readable=("~/.gitconfig",))
    result = run(op(ws, "cat ~/.gitconfig; echo x >> ~/.gitconfig; cat ~/.ssh/id_rsa; true"), cfg)
    assert "name = me" in result.stdout
    assert "PRIVATE KEY" not in result.stdout
    assert (home_dir / ".gitconfig").read_text() == "[user]\n\tname = me\n"


def test_hidden_hides_a_path_outside_home(home):
    base, home_dir = home
    secrets = base / "srv-secrets"
    secrets.mkdir()
    (secrets / "token").write_text("TOPSECRET\n")
    cfg = config(base, home=str(home_dir), hidden=(str(secrets),))
    result = run(op(home_dir / "proj", f"cat {secrets}/token; true"), cfg)
    assert "TOPSECRET" not in result.stdout


def test_hidden_wins_over_readable_naming_the_same_path(home):
    base, home_dir = home
    same = ("~/.aws", "~/.gitconfig")
    cfg = config(base, home=str(home_dir), readable=same, hidden=same)
    result = run(op(home_dir / "proj", "cat ~/.aws/credentials ~/.gitconfig README; true"), cfg)
    assert "hello" in result.stdout  # it ran
    assert "aws_secret" not in result.stdout and "name = me" not in result.stdout


def test_policy_keys_are_validated_naming_the_key():
    assert policy_from_toml('readable = ["~/.gitconfig"]\nhidden = ["/srv/x"]').readable == ("~/.gitconfig",)
    for text, key in [
        ('readable = "~/.gitconfig"', "readable"),
        ('readable = ["relative/path"]', "readable[0]"),
        ('hidden = ["/"]', "hidden[0]"),
        ('hidden = ["~/../etc"]', "hidden[0]"),
    ]:
        with pytest.raises(PolicyError) as info:
            policy_from_toml(text)
        assert info.value.key == key
