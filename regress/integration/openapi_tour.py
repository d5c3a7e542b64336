#!/usr/bin/env python3
"""A tour of every route of a running tregd, each answer validated.

    openapi_tour.py URL DOCUMENT [--dump]

Makes real requests (successes and the usual refusals) and checks each
response body against the schema DOCUMENT (an OpenAPI 3.1 file) gives
for that path, method and status.  A response whose status the document
does not list is a failure too.  --dump prints the answers instead.
Exit 0 when every answer validates; 1 with one line per failure.
"""

import json
import sys
import urllib.error
import urllib.request

import jsonschema

URL, DOC = sys.argv[1], sys.argv[2]
DUMP = "--dump" in sys.argv[3:]
failures = []
seen = set()


def load_doc(path):
    with open(path) as f:
        return json.load(f)


doc = load_doc(DOC)


def validate(schema, instance):
    """Validate with the document's components as the root of $refs."""
    root = {"components": doc.get("components", {}), "allOf": [schema]}
    jsonschema.Draft202012Validator(root).validate(instance)


def request(method, path, body=None, token=None, headers=None):
    data = None
    req = urllib.request.Request(URL + path, method=method)
    if body is not None:
        data = body if isinstance(body, bytes) else \
            json.dumps(body).encode()
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("X-Treg-Token", token)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, data, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def check(method, template, path, body=None, token=None, want=None,
          stream=False):
    """One request to path (an instance of template), validated."""
    status, headers, raw = request(method, path, body, token)
    seen.add((method.lower(), template))
    if want is not None and status != want:
        failures.append("%s %s: status %d, expected %d: %s" %
                        (method, path, status, want, raw[:200]))
    op = doc["paths"].get(template, {}).get(method.lower())
    if op is None:
        failures.append("%s %s: not in the document" % (method, template))
        return status, None
    resp = op["responses"].get(str(status)) or op["responses"].get(
        "default")
    if resp is None:
        failures.append("%s %s: status %d not in the document" %
                        (method, template, status))
        return status, None
    if "$ref" in resp:
        resp = doc["components"]["responses"][resp["$ref"].split("/")[-1]]
    ctype = "application/x-ndjson" if stream else "application/json"
    content = resp.get("content", {}).get(ctype)
    if content is None:
        failures.append("%s %s %d: no %s content in the document" %
                        (method, template, status, ctype))
        return status, None
    docs = [json.loads(line) for line in raw.splitlines() if line] \
        if stream else [json.loads(raw)]
    if DUMP:
        print(method, path, status, raw.decode()[:600])
    schema = content["schema"]
    for d in docs:
        try:
            validate(schema, d)
        except jsonschema.ValidationError as e:
            failures.append("%s %s %d: %s at %s in %s" %
                            (method, template, status, e.message,
                             list(e.absolute_path), json.dumps(d)[:300]))
    return status, docs[-1]


def identity_tour(tok, org):
    """Email sign-in (mail development yes), an identity token's routes."""
    check("POST", "/auth/email/start", "/auth/email/start",
          {"email": "nobody"}, want=422)
    _, st = check("POST", "/auth/email/start", "/auth/email/start",
                  {"email": "person@example.com"}, want=200)
    check("POST", "/auth/email/verify", "/auth/email/verify",
          {"email": "person@example.com", "code": "x"}, want=401)
    _, st = check("POST", "/auth/email/start", "/auth/email/start",
                  {"email": "person@example.com"}, want=200)
    _, ver = check("POST", "/auth/email/verify", "/auth/email/verify",
                   {"email": "person@example.com",
                    "code": st.get("dev_code", "")}, want=200)
    ident = ver.get("token", "")
    check("GET", "/auth/me", "/auth/me", token=ident, want=200)
    for m in ("GET", "POST"):
        check(m, "/auth/cli-token", "/auth/cli-token", token=ident,
              want=200)
        check(m, "/auth/cli-token", "/auth/cli-token", token=tok,
              want=403)
    _, inv = check("POST", "/orgs/{org_id}/invites",
                   "/orgs/%d/invites" % org,
                   {"email": "person@example.com"}, token=tok, want=200)
    _, mine = check("GET", "/invites/mine", "/invites/mine", token=ident,
                    want=200)
    iid = mine[0]["id"] if isinstance(mine, list) and mine else 0
    check("POST", "/invites/{invite_id}/accept", "/invites/%d/accept" %
          iid, token=tok, want=403)
    check("POST", "/invites/{invite_id}/accept", "/invites/%d/accept" %
          iid, token=ident, want=200)
    check("POST", "/invites/{invite_id}/accept", "/invites/%d/accept" %
          iid, token=ident, want=404)
    check("POST", "/auth/revoke-tokens", "/auth/revoke-tokens",
          token=ident, want=200)
    check("POST", "/auth/revoke-tokens", "/auth/revoke-tokens",
          token=ident, want=401)


def main():
    _, me = check("POST", "/users", "/users",
                  {"email": "owner@example.com"}, want=200)
    tok = me["token"]
    org = me["org_id"]
    check("POST", "/users", "/users", {"email": "owner@example.com"},
          want=409)
    check("GET", "/meta", "/meta", want=200)
    check("GET", "/auth/me", "/auth/me", token=tok, want=200)
    check("GET", "/auth/me", "/auth/me", want=401)
    check("GET", "/openapi.json", "/openapi.json", want=200)
    # The agent recipe is markdown: its type, not a schema, is checked.
    status, headers, _ = request("GET", "/skill.md")
    seen.add(("get", "/skill.md"))
    ctype = (headers.get("Content-Type") or "").split(";")[0]
    if status != 200 or ctype not in doc["paths"]["/skill.md"]["get"][
            "responses"]["200"]["content"]:
        failures.append("GET /skill.md: %d %s" % (status, ctype))
    check("GET", "/tools", "/tools", token="x" * 43, want=401)
    check("GET", "/tools", "/tools", want=401)
    check("POST", "/tools", "/tools", b"{", token=tok, want=400)

    _, o2 = check("POST", "/orgs", "/orgs", {"name": "Second"},
                  token=tok, want=200)
    check("GET", "/orgs", "/orgs", token=tok, want=200)

    _, inv = check("POST", "/orgs/{org_id}/invites",
                   "/orgs/%d/invites" % org,
                   {"email": "member@example.com", "role": "member"},
                   token=tok, want=200)
    check("GET", "/orgs/{org_id}/invites", "/orgs/%d/invites" % org,
          token=tok, want=200)
    _, acc = check("POST", "/invites/accept", "/invites/accept",
                   {"code": inv["code"], "email": "member@example.com"},
                   want=200)
    check("POST", "/invites/accept", "/invites/accept",
          {"code": inv["code"], "email": "member@example.com"}, want=404)
    identity_tour(tok, org)
    _, inv2 = check("POST", "/orgs/{org_id}/invites",
                    "/orgs/%d/invites" % org,
                    {"email": "late@example.com"}, token=tok, want=200)
    check("DELETE", "/orgs/{org_id}/invites/{invite_id}",
          "/orgs/%d/invites/%d" % (org, inv2.get("id", 0) or 2),
          token=tok)

    _, members = check("GET", "/orgs/{org_id}/members",
                       "/orgs/%d/members" % org, token=tok, want=200)
    mid = [m for m in members if m["email"] == "member@example.com"][0]
    mid = mid["user_id"]
    check("GET", "/orgs/{org_id}/members", "/orgs/%d/members" % org,
          token=acc["token"], want=403)
    check("PATCH", "/orgs/{org_id}/members/{user_id}",
          "/orgs/%d/members/%d" % (org, mid), {"role": "admin"},
          token=tok, want=200)
    check("PATCH", "/orgs/{org_id}/members/{user_id}/access",
          "/orgs/%d/members/%d/access" % (org, mid),
          {"tool_access": None, "local_run_enabled": True}, token=tok,
          want=200)

    _, agent = check("POST", "/orgs/{org_id}/agents",
                     "/orgs/%d/agents" % org, {"name": "ci"}, token=tok,
                     want=200)
    check("GET", "/orgs/{org_id}/agents", "/orgs/%d/agents" % org,
          token=tok, want=200)

    _, rule = check("POST", "/orgs/{org_id}/deny", "/orgs/%d/deny" % org,
                    {"host": "blocked.example.com", "note": "no"},
                    token=tok, want=200)
    check("GET", "/orgs/{org_id}/deny", "/orgs/%d/deny" % org, token=tok,
          want=200)
    check("DELETE", "/orgs/{org_id}/deny/{rule_id}",
          "/orgs/%d/deny/%d" % (org, rule["id"]), token=tok, want=200)

    # Projects (treg's sub-scope of an org) and the usage counts.
    _, proj = check("POST", "/orgs/{org_id}/projects",
                    "/orgs/%d/projects" % org, {"name": "Apollo"},
                    token=tok, want=200)
    check("POST", "/orgs/{org_id}/projects", "/orgs/%d/projects" % org,
          {"name": "apollo"}, token=tok, want=409)
    check("GET", "/orgs/{org_id}/projects", "/orgs/%d/projects" % org,
          token=tok, want=200)
    check("GET", "/orgs/{org_id}/usage", "/orgs/%d/usage?days=7" % org,
          token=tok, want=200)
    check("DELETE", "/orgs/{org_id}/projects/{project_id}",
          "/orgs/%d/projects/%d" % (org, proj["id"]), token=tok, want=200)
    check("DELETE", "/orgs/{org_id}/projects/{project_id}",
          "/orgs/%d/projects/%d" % (org, proj["id"]), token=tok, want=404)

    _, sec = check("POST", "/secrets", "/secrets",
                   {"name": "demo-key", "value": "sk_live_demo_1234567890",
                    "kind": "env"}, token=tok, want=200)
    check("POST", "/secrets", "/secrets",
          {"name": "short", "value": "abc", "kind": "env"}, token=tok,
          want=200)
    check("POST", "/secrets", "/secrets", {"name": "x"}, token=tok,
          want=422)
    check("GET", "/secrets", "/secrets", token=tok, want=200)
    check("PATCH", "/secrets/{secret_id}", "/secrets/%d" % sec["id"],
          {"name": "demo-key"}, token=tok, want=200)

    tool = {"name": "demo", "base_url": "https://api.example.com",
            "bindings": [{"secret_id": sec["id"], "name": "Authorization",
                          "format": "Bearer {secret}"}],
            "cli": {"bin": "sh", "inject": [
                {"via": "env", "name": "DEMO_KEY",
                 "secret_id": sec["id"]}],
                "env": {"DEMO_REGION": "eu-west-1"}}}
    _, t = check("POST", "/tools", "/tools", tool, token=tok, want=200)
    if t is None or t["cli"].get("env") != {"DEMO_REGION": "eu-west-1"}:
        failures.append("POST /tools: the profile's env is not in the "
                        "tool view: %s" % json.dumps(t)[:300])
    check("POST", "/tools", "/tools", tool, token=tok, want=409)
    check("GET", "/tools", "/tools", token=tok, want=200)
    check("GET", "/tools/by-name/{name}", "/tools/by-name/demo",
          token=tok, want=200)
    check("GET", "/tools/by-name/{name}", "/tools/by-name/none",
          token=tok, want=404)
    check("PATCH", "/tools/{tool_id}", "/tools/%d" % t["id"],
          {"examples": ["demo -c true"]}, token=tok, want=200)

    _, g = check("POST", "/tools/{name}/grant", "/tools/demo/grant",
                 {"argv": ["-c", "true"]}, token=tok, want=200)
    check("POST", "/tools/{name}/run-report", "/tools/demo/run-report",
          {"audit_id": g["audit_id"], "exit_code": 0, "verdict": "ok"},
          token=tok, want=200)

    skill = {"name": "sh-skill", "recipe": "# sh-skill\n",
             "files": {"notes.txt": "hello"},
             "secrets": [{"local_name": "my-secret", "kind": "env",
                          "value": "s3cr3t-value"}],
             "tools": [{"name": "sh-skill",
                        "base_url": "https://api.example.org",
                        "cli": {"bin": "sh", "inject": [
                            {"secret": "my-secret", "via": "env",
                             "name": "MY_SECRET"}]}}]}
    _, b = check("POST", "/skills", "/skills", skill, token=tok, want=200)
    check("GET", "/bundles", "/bundles", token=tok, want=200)
    check("GET", "/bundles/{bundle_id}", "/bundles/%d" % b["id"],
          token=tok, want=200)
    check("GET", "/bundles/by-name/{name}", "/bundles/by-name/sh-skill",
          token=tok, want=200)
    check("PATCH", "/bundles/{bundle_id}", "/bundles/%d" % b["id"],
          {"recipe": "# new\n"}, token=tok, want=200)

    check("POST", "/run", "/run",
          {"tool": "demo", "args": ["-c", "echo $DEMO_KEY; echo e >&2"]},
          token=tok, want=200)
    check("POST", "/run", "/run",
          {"tool": "demo", "args": ["-c", "echo $DEMO_KEY; echo e >&2"],
           "stream": True}, token=tok, want=200, stream=True)
    check("POST", "/run", "/run", {"tool": "ghost", "args": []},
          token=tok, want=404)
    check("GET", "/runs", "/runs?limit=10", token=tok, want=200)
    check("GET", "/calls", "/calls?limit=10", token=tok, want=200)
    # A server run from a runtime treg's client names: a roster row.
    request("POST", "/run", {"tool": "demo", "args": ["-c", "true"]}, tok,
            {"X-Treg-Client": "claude-code"})
    _, seen_rows = check("GET", "/orgs/{org_id}/agents/observed",
                         "/orgs/%d/agents/observed" % org, token=tok,
                         want=200)
    if not seen_rows:
        failures.append("GET /orgs/{org_id}/agents/observed: no row")
    check("GET", "/orgs/{org_id}/agents/observed",
          "/orgs/%d/agents/observed" % org, want=401)
    check("GET", "/health", "/health", token=tok, want=200)
    check("POST", "/health/run", "/health/run", token=tok, want=200)
    check("POST", "/health/run", "/health/run", want=401)

    check("DELETE", "/bundles/{bundle_id}", "/bundles/%d" % b["id"],
          token=tok, want=200)
    check("DELETE", "/secrets/{secret_id}", "/secrets/%d" % sec["id"],
          token=tok, want=409)
    check("DELETE", "/tools/{tool_id}", "/tools/%d" % t["id"], token=tok,
          want=200)
    check("DELETE", "/secrets/{secret_id}", "/secrets/%d" % sec["id"],
          token=tok, want=200)
    check("DELETE", "/orgs/{org_id}/agents/{user_id}",
          "/orgs/%d/agents/%d" % (org, agent["user_id"]), token=tok,
          want=200)
    check("DELETE", "/orgs/{org_id}/members/{user_id}",
          "/orgs/%d/members/%d" % (org, mid), token=tok, want=200)
    check("POST", "/orgs/{org_id}/leave", "/orgs/%d/leave" % org,
          token=tok, want=409)
    check("DELETE", "/orgs/{org_id}", "/orgs/%d?confirm=second" %
          o2["org_id"], token=o2["token"], want=200)

    # /call: tregd's own refusal of a tool the org does not have.
    for m in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        check(m, "/call/{tool}/{path}", "/call/nosuch/x", token=tok,
              want=404)

    missing = [(m, p) for p, ops in doc["paths"].items() for m in ops
               if (m, p) not in seen]
    for m, p in missing:
        failures.append("%s %s: in the document, never requested" %
                        (m.upper(), p))
    for f in failures:
        print(f)
    return 1 if failures else 0


sys.exit(main())
