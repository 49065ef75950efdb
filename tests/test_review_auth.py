"""Sign-in and roles (issue 27): the sign-in file read strictly (each problem names its key, exit 2), the roles
the provider's claims give, a non-loopback address refused without --auth, and in the dashboard (AppTest, with
the claims Streamlit's st.user would hold): a viewer is offered no control and a direct call of the recording
path is refused on the server; a reviewer's record names the identity; only a lead signs off; an exposed server
without sign-in says so on every page and records nothing."""

import json
import sys
from pathlib import Path

import pytest
from apptest import open_page
from streamlit.testing.v1 import AppTest

from reporting.cli import main
from reporting.format.auth_file import AuthFileError, RoleMap, check_auth, permits
from reporting.format.reviews import read_reviews

ROOT = Path(__file__).resolve().parent.parent
ISSUER = "http://127.0.0.1:9/"
GOOD = {
    "provider": {
        "metadata_url": "https://id.example.org/.well-known/openid-configuration",
        "client_id": "runlens",
        "client_secret_env": "T_CLIENT",
        "cookie_secret_env": "T_COOKIE",
        "redirect_uri": "https://runlens.example.org/oauth2callback",
    },
    "roles": {
        "lead": ["email:Lead@Example.org"],
        "reviewer": ["group:red-team", "sub:s-ann"],
        "viewer": ["group:product"],
    },
}
ENV = {"T_CLIENT": "client-secret", "T_COOKIE": "c" * 32}


def _problems(document, env=ENV):
    with pytest.raises(AuthFileError) as caught:
        check_auth(document, "auth.toml", env)
    return caught.value.lines


def _with(section, key, value):
    document = json.loads(json.dumps(GOOD))
    if value is None:
        del document[section][key]
    else:
        document[section][key] = value
    return document


def test_a_good_file_reads_and_its_secrets_come_from_the_environment():
    config = check_auth(GOOD, "auth.toml", ENV)
    assert (config.client_secret, config.cookie_secret, config.scope) == (
        "client-secret",
        "c" * 32,
        "openid profile email",
    )
    assert config.roles.rules["lead"] == ("email:lead@example.org",)  # addresses compared in lower case


def test_each_problem_names_its_key():
    assert _problems(GOOD, {"T_COOKIE": "c" * 32}) == [
        "auth.toml: provider.client_secret_env: the environment variable T_CLIENT is not set or empty "
        "(the client secret is read from it)"
    ]
    assert (
        "auth.toml: provider.cookie_secret_env: the environment variable T_COOKIE holds 5 characters"
        in (_problems(GOOD, {**ENV, "T_COOKIE": "short"})[0])
    )
    assert _problems(_with("roles", "admin", ["email:x@y"]))[0].startswith("auth.toml: roles.admin: unknown role")
    assert _problems(_with("roles", "reviewer", ["mail:x@y"]))[0].startswith("auth.toml: roles.reviewer[0]: a rule is")
    assert _problems(_with("roles", "default", "reviewer"))[0].startswith("auth.toml: roles.default: must be none or")
    assert _problems(_with("provider", "client_id", None)) == [
        "auth.toml: provider.client_id: required: the client id the provider gave RunLens"
    ]
    assert _problems(_with("provider", "metadata_url", "http://id.example.org/x"))[0].startswith(
        "auth.toml: provider.metadata_url: must be https://"
    )
    assert _problems(_with("provider", "redirect_uri", "https://r.example.org/"))[0] == (
        "auth.toml: provider.redirect_uri: must end with /oauth2callback (where Streamlit receives the sign-in)"
    )
    assert _problems(_with("provider", "client_secret", "inline"))[0].startswith(
        "auth.toml: provider.client_secret: unknown key"
    )
    assert _problems({"provider": GOOD["provider"], "roles": {}}) == [
        "auth.toml: roles: no rule gives anyone a role: name the lead, reviewers and viewers"
    ]


def test_roles_from_claims_the_highest_wins_and_an_unverified_address_counts_for_nothing():
    roles = check_auth(GOOD, "auth.toml", ENV).roles
    assert roles.role({"sub": "x", "email": "lead@example.org", "groups": ["product"]}) == "lead"
    assert roles.role({"sub": "x", "email": "lead@example.org", "email_verified": False}) is None
    assert roles.role({"sub": "s-ann"}) == "reviewer"
    assert roles.role({"sub": "x", "groups": ["product", "red-team"]}) == "reviewer"
    assert roles.role({"sub": "x", "groups": ["product"]}) == "viewer"
    assert roles.role({"sub": "x", "groups": ["nobody"]}) is None
    assert RoleMap(roles.rules, "viewer").role({"sub": "x"}) == "viewer"
    assert [permits(r, "review") for r in ("viewer", "reviewer", "lead", None)] == [False, True, True, False]
    assert [permits(r, "signoff") for r in ("viewer", "reviewer", "lead", None)] == [False, False, True, False]


def _auth_file(tmp_path, metadata_url, env_name="T_CLIENT"):
    path = tmp_path / "auth.toml"
    path.write_text(
        "[provider]\n"
        f'metadata_url = "{metadata_url}"\n'
        'client_id = "runlens"\n'
        f'client_secret_env = "{env_name}"\n'
        'cookie_secret_env = "T_COOKIE"\n'
        'redirect_uri = "http://127.0.0.1:8599/oauth2callback"\n'
        "[roles]\n"
        'lead = ["email:lead@example.org"]\n'
    )
    return path


def test_the_dashboard_command_refuses_bad_settings_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("T_CLIENT", "x")
    monkeypatch.setenv("T_COOKIE", "c" * 32)
    runs = tmp_path / "runs"
    runs.mkdir()
    assert main(["dashboard", str(runs), "--address", "0.0.0.0", "--no-browser"]) == 2
    assert "--address 0.0.0.0: the dashboard would serve every run" in capsys.readouterr().err
    unreachable = _auth_file(tmp_path, "http://127.0.0.1:9/.well-known/openid-configuration")
    assert main(["dashboard", str(runs), "--auth", str(unreachable), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert f"{unreachable}: provider.metadata_url: the provider cannot be reached at http://127.0.0.1:9/" in err
    assert "Traceback" not in err
    monkeypatch.delenv("T_CLIENT")
    assert main(["dashboard", str(runs), "--auth", str(unreachable), "--no-browser"]) == 2
    assert "provider.client_secret_env: the environment variable T_CLIENT is not set" in capsys.readouterr().err
    unknown = tmp_path / "unknown.toml"
    unknown.write_text(unreachable.read_text().replace('lead = ["email:lead@example.org"]', 'admin = ["sub:x"]'))
    assert main(["dashboard", str(runs), "--auth", str(unknown), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert f"{unknown}: roles.admin: unknown role" in err and "Traceback" not in err
    (tmp_path / "bad.toml").write_text("[provider\n")
    assert main(["dashboard", str(runs), "--auth", str(tmp_path / "bad.toml"), "--no-browser"]) == 2
    assert "bad.toml: not a TOML file" in capsys.readouterr().err
    assert main(["dashboard", str(runs), "--auth", str(unreachable), "--no-auth-i-know", "--no-browser"]) == 2


# --- the dashboard, with the claims st.user would hold -------------------------------------------------------------


def _folder(tmp_path):
    cases = [
        {"probe_id": "p1", "category": "c", "severity": "high", "passed": True, "risk_score": 0.1, "response": "ok"},
        {"probe_id": "p2", "category": "c", "severity": "low", "passed": False, "risk_score": 0.9, "response": "x"},
    ]
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "run.json").write_text(
        json.dumps({"schema_version": 2, "run": {"run_id": "r", "model": "m"}, "cases": cases})
    )
    return folder


def _signin_mode(tmp_path, monkeypatch):
    roles = tmp_path / "roles.json"
    rules = {"lead": ["sub:s-lead"], "reviewer": ["group:red-team"], "viewer": ["group:product"]}
    roles.write_text(json.dumps({"roles": {"rules": rules, "default": None}, "issuer": ISSUER}))
    monkeypatch.setattr(sys, "argv", ["app.py", "--auth-roles", str(roles)])


def _app(folder, monkeypatch, user) -> AppTest:
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    monkeypatch.chdir(ROOT)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.user = user
    return open_page(at.run(), "review").run()


def _user(sub, name, groups=()):
    return {"is_logged_in": True, "sub": sub, "name": name, "iss": ISSUER, "groups": list(groups)}


def _buttons(at):
    """The buttons of sign-in and of recording (not the sidebar's filters)."""
    return sorted(b.key for b in at.button if b.key and b.key.startswith(("do_", "signoff", "auth_")))


def test_nobody_signed_in_sees_only_the_sign_in(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    _signin_mode(tmp_path, monkeypatch)
    at = _app(folder, monkeypatch, {"is_logged_in": False})
    assert not at.exception and _buttons(at) == ["auth_sign_in"]
    assert not any("p2" in t.value for t in at.text) and len(at.sidebar.selectbox) == 0  # no run loaded or shown
    at = _app(folder, monkeypatch, _user("s-x", "Xavier", ["elsewhere"]))  # signed in, no role
    assert "who has no role on this dashboard" in at.error[0].value and _buttons(at) == ["auth_sign_out"]


def test_a_viewer_is_offered_no_control_and_a_reviewer_records_under_the_identity(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    _signin_mode(tmp_path, monkeypatch)
    at = _app(folder, monkeypatch, _user("s-pat", "Pat", ["product"]))
    assert not at.exception and "probe p2  |  category c" in [t.value for t in at.text]
    assert _buttons(at) == ["auth_sign_out"]  # no decision, no sign-off, no typed name
    assert [w.key for w in at.sidebar.text_input if w.key == "reviewer"] == []  # no typed name
    assert any(t.value == "Signed in: Pat (viewer)" for t in at.sidebar.text)

    at = _app(folder, monkeypatch, _user("s-ann", "Ann", ["red-team"]))
    assert "signoff" not in _buttons(at) and "do_Confirm_p2" in _buttons(at)
    at.button(key="do_Confirm_p2").click().run()
    assert not at.exception and [s.value for s in at.success] == ["Recorded: p2 fail"]
    (record,) = read_reviews(folder / "run.reviews.jsonl")[0]
    assert (record["reviewer"], record["identity"], record["role"]) == (
        "Ann",
        {"issuer": ISSUER, "subject": "s-ann"},
        "reviewer",
    )

    at = _app(folder, monkeypatch, _user("s-lead", "Lee"))
    at.button(key="signoff").click().run()
    assert [s.value for s in at.success] == ["Signed off by Lee"]
    signoff = read_reviews(folder / "run.reviews.jsonl")[0][-1]
    assert signoff["kind"] == "signoff" and signoff["identity"]["subject"] == "s-lead"
    assert signoff["covers"]["records"] == 1


DIRECT = """
import os
from pathlib import Path
import streamlit as st
from reporting.sources.reading import read_run
from reporting.ui.review_page import record_decision, record_signoff

run = read_run(os.environ["RL_RUN"])
trail = Path(os.environ["RL_TRAIL"])
st.text("decision: " + str(record_decision(trail, run, run.cases[1], "pass", "forged", None, "failures")))
st.text("signoff: " + str(record_signoff(trail, run, 0)))
"""


@pytest.mark.parametrize(
    "user, decision, signoff",
    [
        (_user("s-pat", "Pat", ["product"]), "may not record a review decision", "may not sign a run off"),
        ({"is_logged_in": False}, "nobody is signed in", "nobody is signed in"),
        (_user("s-ann", "Ann", ["red-team"]), "None", "may not sign a run off"),
    ],
)
def test_the_recording_path_itself_checks_the_role(tmp_path, monkeypatch, user, decision, signoff):
    """A request for a control the page never drew reaches, at most, the recording functions: they decide from
    the session's identity on the server."""
    folder = _folder(tmp_path)
    _signin_mode(tmp_path, monkeypatch)
    script = tmp_path / "direct.py"
    script.write_text(DIRECT)
    monkeypatch.setenv("RL_RUN", str(folder / "run.json"))
    monkeypatch.setenv("RL_TRAIL", str(folder / "run.reviews.jsonl"))
    at = AppTest.from_file(str(script), default_timeout=60)
    at.user = user
    at.run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert decision in texts[0] and signoff in texts[1]
    records = read_reviews(folder / "run.reviews.jsonl")[0]
    assert [r["kind"] for r in records] == (["review"] if decision == "None" else [])


def test_an_exposed_server_without_sign_in_says_so_on_every_page_and_records_nothing(tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    monkeypatch.setattr(sys, "argv", ["app.py", "--no-auth"])
    at = _app(folder, monkeypatch, {})
    assert at.warning[0].value.startswith("This server has no sign-in")
    assert [k for k in _buttons(at) if k.startswith("do_") or k == "signoff"] == []
    monkeypatch.setenv("REPORTING_RUNS_DIR", str(folder))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()  # the overview too
    assert at.warning[0].value.startswith("This server has no sign-in")


def test_what_streamlit_reads_is_written_from_the_file_and_the_environment():
    try:
        import tomllib
    except ImportError:  # Python 3.10: the toml package Streamlit depends on there
        import toml as tomllib

    from reporting.commands.dashboard_auth import secrets_toml

    document = _with("provider", "prompt", "login")
    document["provider"]["client_id"] = 'run"lens\\'  # quoted for TOML, never breaking out of its string
    config = check_auth(document, "auth.toml", ENV)
    assert tomllib.loads(secrets_toml(config)) == {
        "auth": {
            "redirect_uri": "https://runlens.example.org/oauth2callback",
            "cookie_secret": "c" * 32,
            "client_id": 'run"lens\\',
            "client_secret": "client-secret",
            "server_metadata_url": "https://id.example.org/.well-known/openid-configuration",
            "client_kwargs": {"scope": "openid profile email", "prompt": "login"},
        }
    }
    assert _problems(_with("provider", "prompt", "none"))[0].startswith("auth.toml: provider.prompt: must be one of")


def test_the_launch_options_loopback_exposed_and_signed_in(tmp_path, monkeypatch):
    import argparse
    import os
    import shutil
    import stat

    from browser import IN_CI
    from oidc_provider import CLIENT_SECRET, COOKIE_SECRET, HAS_PROVIDER, auth_file, oidc_provider

    from reporting.commands.dashboard_auth import prepare
    from reporting.commands.tools import dashboard_command

    def args(address, auth=None, no_auth=False):
        return argparse.Namespace(address=address, auth=auth, no_auth_i_know=no_auth)

    for address in ("127.0.0.1", "127.3.4.5", "::1", "localhost"):
        assert prepare(args(address)).app_args == [] and prepare(args(address)).folder is None
    assert prepare(args("0.0.0.0", no_auth=True)).app_args == ["--no-auth"]
    command = dashboard_command(str(tmp_path), 8501, "0.0.0.0", False, None, ["--secrets.files", "S"], ["--no-auth"])
    assert command[-4:] == ["--", "--runs", str(tmp_path), "--no-auth"] and command[-6:-4] == ["--secrets.files", "S"]
    if not HAS_PROVIDER:  # the part with the provider: a failure in CI (RUNLENS_CI=1), a named skip elsewhere
        (pytest.fail if IN_CI else pytest.skip)("node and tests/oidc/node_modules are missing (npm ci in tests/oidc)")
    monkeypatch.setenv("RUNLENS_TEST_CLIENT_SECRET", CLIENT_SECRET)
    monkeypatch.setenv("RUNLENS_TEST_COOKIE_SECRET", COOKIE_SECRET)
    redirect = "http://127.0.0.1:8599/oauth2callback"
    with oidc_provider({}, redirect, tmp_path) as issuer:
        launch = prepare(args("127.0.0.1", str(auth_file(tmp_path, issuer, redirect, {"lead": ["sub:lee"]}))))
    try:
        assert launch.issuer == issuer and launch.options[0] == "--secrets.files"
        assert stat.S_IMODE(os.stat(launch.folder).st_mode) == 0o700
        secrets, roles = launch.options[1], launch.app_args[1]
        assert launch.app_args[0] == "--auth-roles"
        for path in (secrets, roles):
            assert os.path.dirname(path) == launch.folder and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        text = open(secrets).read()
        assert (
            f'client_secret = "{CLIENT_SECRET}"' in text and CLIENT_SECRET not in (tmp_path / "auth.toml").read_text()
        )
        assert json.loads(open(roles).read())["roles"]["rules"] == {"lead": ["sub:lee"]}
    finally:
        shutil.rmtree(launch.folder)
