"""The approvals page in a real browser: Debian's chromium driven by Playwright, over a
real daemon. Log in with the token, approve, deny with a note, the typed word for a
dangerous approval, agent text shown inert, and the refusals: a wrong token, CSRF, a
replayed form, a wrong Origin or Host, a push link used twice or expired, a form whose
request changed after it was shown. The pages follow the queue by themselves."""

from __future__ import annotations

import http.client
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.daemon import DaemonProcess, operation, submit_in_thread, workspace
from support.paths import REPO
from support.sshd import free_port
from support.web import CHROMIUM, CHROMIUM_ARGS, have_chromium, push_recorder, wait_until, web_page

from console.remote.contexts import LOCAL_TARGET

pytestmark = pytest.mark.browser

DAEMON_POLICY = "approval_timeout_s = 120\n"
SCREENSHOTS = REPO / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not have_chromium():
        pytest.skip("needs Debian's chromium at /usr/bin/chromium (./dev installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def fields(page: Any) -> dict[str, str]:
    """The decision form's hidden fields as the page rendered them."""
    return {
        name: page.get_attribute(f"form.decide input[name={name}]", "value")
        for name in ("csrf", "action", "fingerprint")
    }


def queue(page: Any, url: str) -> None:
    """Open the queue. It reloads itself when a request arrives; a goto that races that
    reload is overtaken by it ("interrupted by another navigation"), to the same page."""
    from playwright.sync_api import Error

    try:
        page.goto(url)
    except Error as exc:
        if "interrupted by another navigation" not in str(exc):
            raise
        page.wait_for_url(url)
        page.wait_for_load_state()


def login(page: Any, url: str, token: str) -> None:
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_url(url)


def test_log_in_approve_deny_and_every_refusal(daemon: DaemonProcess, browser: Any, tmp_path: Path) -> None:
    ws = workspace()
    port = free_port("127.0.0.1")
    with (
        push_recorder() as (topic, posts),
        web_page([LOCAL_TARGET], daemon.state_dir, port=port, ntfy=topic) as site,
    ):
        context = browser.new_context()
        page = context.new_page()
        queue(page, site.url + "/")
        assert "/login" in page.url
        page.fill("input[name=token]", "not the token at all, not at all")
        page.click("button[type=submit]")
        assert "wrong token" in page.inner_text("body")
        login(page, site.url + "/", site.token)
        assert "Nothing waits for you" in page.inner_text("body")

        # 1. A request whose agent text would be markup and escapes: shown inert; approved once.
        hostile = "<script>document.title='pwned'</script> \x1b[2J \u202eevil"
        first = submit_in_thread(daemon, operation(ws, network="any", justification=hostile))
        wait_until(lambda: site.inbox.items())
        page.reload()
        assert "1 pending" in page.inner_text("h2")
        assert page.inner_text("td.host") == "local"
        page.click("text=open")
        body = page.inner_text("body")
        assert "<script>document.title='pwned'</script>" in body
        assert "\\e[2J" in body and "\\u202e" in body and "\x1b" not in body
        scripts = page.locator("script")
        assert [scripts.nth(i).get_attribute("src") for i in range(scripts.count())] == ["/static/poll.js"]
        assert page.title() != "pwned"
        assert "NET" in page.inner_text("h2")
        shot = tmp_path / "web-detail.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("AGENT_CONSOLE_KEEP_SCREENSHOTS"):
            shutil.copy(shot, SCREENSHOTS / "web-detail.png")
        form = fields(page)
        detail_url = page.url
        page.click("button[value='approve:once']")
        page.wait_for_url(site.url + "/")
        assert "approved once" in page.inner_text(".flash")
        answer = first()
        assert answer["verdict"] == "allow" and answer["source"] == "operator"

        # The same POST again (a replay): its action token is spent.
        replay = context.request.post(
            detail_url + "/decide", form={**form, "decision": "approve:once"}, headers={"Origin": site.url}
        )
        assert replay.status == 403 and "already used" in replay.text()

        # 2. Deny with a note, from a push link opened on a "phone" (another browser, not logged in).
        second = submit_in_thread(daemon, operation(ws, executable="ls", network="any"))
        wait_until(lambda: len(posts) >= 2)
        pushed = posts[-1]
        assert "waits on you" in pushed["body"] and "ls" not in pushed["body"].replace("local", "")
        link = pushed["headers"]["Click"]
        phone = browser.new_context()
        ph = phone.new_page()
        ph.goto(link)
        assert "/login" in ph.url
        ph.fill("input[name=token]", site.token)
        ph.click("button[type=submit]")
        ph.wait_for_url("**/req/local/r-*")
        ph.fill("textarea[name=note]", "not from this branch")
        ph.click("button[value=deny]")
        ph.wait_for_url(site.url + "/")
        assert "denied" in ph.inner_text(".flash")
        answer = second()
        assert answer["verdict"] == "deny" and answer["note"] == "not from this branch"
        used = ph.goto(link)
        assert used is not None and used.status == 410 and "used already" in ph.inner_text("body")

        # 3. A dangerous approval needs its word typed; a refused try spends its form.
        third = submit_in_thread(
            daemon, operation(ws, executable="env", capabilities=[{"kind": "unrestricted"}], network="any")
        )
        wait_until(lambda: len(posts) >= 3)
        expiring = posts[-1]["headers"]["Click"]
        queue(page, site.url + "/")
        page.click("text=open")
        assert "Type unrestricted to approve" in page.inner_text("body")
        form = fields(page)
        request_url = page.url
        page.click("button[value='approve:once']")
        assert "type unrestricted to approve" in page.inner_text(".flash")
        assert site.inbox.items(), "still pending"
        again = context.request.post(
            request_url + "/decide",
            form={**form, "decision": "approve:once", "word": "unrestricted"},
            headers={"Origin": site.url},
        )
        assert again.status == 403 and "already used" in again.text()

        # CSRF: a fresh form, the wrong CSRF token.
        page.goto(request_url)
        form = fields(page)
        forged = context.request.post(
            request_url + "/decide",
            form={**form, "csrf": "x" * 43, "decision": "deny"},
            headers={"Origin": site.url},
        )
        assert forged.status == 403 and "CSRF" in forged.text()
        # A cross-site form: another Origin, or none.
        for origin in ({"Origin": "http://evil.example"}, {}):
            cross = context.request.post(
                request_url + "/decide", form={**form, "decision": "deny"}, headers=origin
            )
            assert cross.status == 403 and "Origin" in cross.text()
        # DNS rebinding: another Host name for this address.
        cookies = "; ".join(f"{c['name']}={c['value']}" for c in context.cookies())
        raw = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        raw.request("GET", "/", headers={"Host": f"evil.example:{port}", "Cookie": cookies})
        assert raw.getresponse().status == 421
        raw.close()
        # An expired push link opens nothing.
        site.advance(901)
        expired = ph.goto(expiring)
        assert expired is not None and expired.status == 410

        page.goto(request_url)
        page.fill("input[name=word]", "unrestricted")
        page.click("button[value='approve:once']")
        page.wait_for_url(site.url + "/")
        assert third()["verdict"] == "allow"
        phone.close()
        context.close()


def test_the_pages_follow_the_queue_and_a_changed_request_is_a_conflict(
    daemon: DaemonProcess, browser: Any
) -> None:
    ws = workspace()
    port = free_port("127.0.0.1")
    with web_page([LOCAL_TARGET], daemon.state_dir, port=port) as site:
        context = browser.new_context()
        page = context.new_page()
        queue(page, site.url + "/")
        login(page, site.url + "/", site.token)
        assert page.get_attribute("body", "data-every") == "0.5"

        # A request arriving shows on the open queue by itself (the page polls; no reload by the test).
        first = submit_in_thread(daemon, operation(ws, network="any"))
        host, shown = wait_until(
            lambda: next((p for p in site.inbox.items() if p[1].operation.workspace_root == str(ws)), None)
        )
        rid = shown.request_id
        link = page.locator(f"a[href='/req/{host}/{rid}']")
        link.wait_for(timeout=15_000)
        link.click()
        page.wait_for_url(f"**/req/{host}/{rid}")
        detail_url = page.url
        assert page.locator("#changed").is_hidden()

        # The request under that id is no longer the one shown (its fingerprint differs): the
        # open page says so, and its decision is refused as a conflict, with nothing decided.
        other = "f" * 64 if shown.fingerprint != "f" * 64 else "e" * 64
        site.in_loop(
            lambda: site.inbox.hosts[host].pending.__setitem__(
                rid, msgspec.structs.replace(shown, fingerprint=other)
            )
        )
        page.locator("#changed").wait_for(state="visible", timeout=15_000)
        with page.expect_response(lambda r: r.url.endswith("/decide")) as posted:
            page.click("button[value='approve:once']")
        assert posted.value.status == 409
        body = page.inner_text("body")
        assert "refused (conflict)" in body and "changed after this page showed it" in body
        assert f"you saw fingerprint {shown.fingerprint[:12]}" in body and "Nothing was decided" in body
        with daemon.operator() as op:
            assert [p["request_id"] for p in op.call("pending.list")["pending"]] == [rid]

        # The page shown again holds what is pending now; deciding it elsewhere shows on it too.
        site.in_loop(lambda: site.inbox.hosts[host].pending.__setitem__(rid, shown))
        page.click("text=open the request again")
        page.wait_for_url(detail_url)
        assert page.locator("#changed").is_hidden()
        with daemon.operator() as op:
            op.call("decide", {"target": rid, "action": "deny", "note": "from the console"})
        assert first()["note"] == "from the console"
        page.locator("#changed").wait_for(state="visible", timeout=15_000)
        queue(page, site.url + "/")
        assert page.locator(f"a[href='/req/{host}/{rid}']").count() == 0
        context.close()
