"""The harness itself: a real page in a real browser, at both sizes, checked."""

from __future__ import annotations

import pytest

from tests.harness.browser import assert_page_ok, horizontal_overflow


def test_the_sign_in_page_passes_the_page_check(page, check_page):
    page.goto("/accounts/login/")
    assert page.get_by_role("heading", level=1).count() == 1
    shot = check_page(page, "sign-in", screenshot=True)
    assert shot is not None and shot.read_bytes().startswith(b"\x89PNG")


def test_a_signed_in_person_sees_their_accord(page, sign_in, make_user, check_page):
    person = make_user("ada@example.com", display_name="Ada Lovelace")
    sign_in(page, person)
    page.goto("/")
    assert "Ada Lovelace" in page.locator("header").inner_text()
    check_page(page, "accord-empty")


@pytest.mark.parametrize("viewport", ["phone"], indirect=True)
def test_the_overflow_check_names_what_is_too_wide(page):
    page.set_content('<body style="margin:0"><div id="wide" style="width:900px">x</div></body>')
    overflow = horizontal_overflow(page)
    assert overflow["scrollWidth"] > overflow["clientWidth"]
    assert any(c.startswith("div#wide") for c in overflow["culprits"])


@pytest.mark.parametrize("viewport", ["phone"], indirect=True)
def test_a_failing_check_writes_its_screenshot(page, tmp_path):
    page.set_content('<body style="margin:0"><div id="wide" style="width:900px">x</div></body>')
    with pytest.raises(AssertionError, match="too wide") as failure:
        assert_page_ok(page, "too-wide", tmp_path, keep_shot=False)
    shot = tmp_path / "too-wide-phone.png"
    assert shot.read_bytes().startswith(b"\x89PNG")
    assert f"screenshot: {shot}" in failure.value.__notes__


@pytest.mark.parametrize("viewport", ["phone"], indirect=True)
def test_a_passing_check_writes_no_screenshot_unless_asked(page, tmp_path):
    page.set_content('<html lang="en"><title>Fits</title><main><h1>Fits</h1></main></html>')
    assert assert_page_ok(page, "fits", tmp_path, keep_shot=False) is None
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("viewport", ["phone"], indirect=True)
def test_axe_reports_a_serious_violation(page, tmp_path):
    page.set_content(
        '<html lang="en"><title>Bad</title><main><h1>Bad</h1><img src="x.png"></main></html>'
    )
    with pytest.raises(AssertionError, match="image-alt"):
        assert_page_ok(page, "bad", tmp_path, keep_shot=False)


def test_a_signed_in_person_opens_a_page_that_wants_a_recent_sign_in(
    page, sign_in, make_user, check_page
):
    person = make_user("grace@example.com", display_name="Grace Hopper")
    sign_in(page, person)
    page.goto("/settings/tokens/")
    assert page.url.endswith("/settings/tokens/")
