/*
 * vault_audit.c: how every calls row begins (audit_call_init), the
 * local-run audit rows (kind local_run, and a server run's refusals, kind
 * server_run) and the refusals that go on record:
 * a cli.deny match, an injection that does not resolve.  Runs and grants
 * refuse through here, in one wording; a row that cannot be written
 * fails closed (503).
 */

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "vault.h"

/*
 * Fail closed: an audit row that cannot be written stops what it was to
 * record.  A 503, as for server runs, so a client can tell it from a
 * refusal.
 */
void
audit_unwritable(struct vault_resp *resp, const char *what)
{
	log_warnx("audit row not written (%s): %s", what, store_error());
	resp_refuse(resp, 503, "the audit log cannot be written — %s", what);
}

int
cli_deny_refuse(const struct auth *a, const struct tool_row *t,
    json_t *argv, const char *kind, struct vault_resp *resp)
{
	struct local_audit	 la;
	const char		*why;
	char			 pat[DENY_LEN_MAX + 1];
	int			 dflt = 0;

	/* The profile's own patterns, then the catalog's rules for its bin. */
	if (!deny_match(t->id, t->cli, argv, pat, sizeof(pat), &why)) {
		if (!catalog_deny(t->cli, argv, pat, sizeof(pat), &why))
			return (0);
		dflt = 1;
	}
	memset(&la, 0, sizeof(la));
	la.kind = kind;
	la.tool = t->name;
	la.argv = argv;
	la.action = "DENY";
	la.status = 403;
	la.refused_by = "cli.deny";
	la.verdict = dflt ? NULL : why;	/* which limit decided, if one did */
	if (audit_local(a, &la) == -1) {
		audit_unwritable(resp, strcmp(kind, "server_run") == 0 ?
		    "nothing was run" : "nothing was granted");
		return (-1);
	}
	/* treg compatibility: a catalog default says so, as treg does. */
	if (dflt)
		resp_error(resp, 403, "denied by the treg catalog defaults: "
		    "pattern '%.256s' (%s). The skill's creator can opt out "
		    "with \"deny_defaults\": false in its cli block.", pat,
		    why);
	else if (why != NULL)
		resp_error(resp, 403, "denied by the tool's cli.deny: pattern "
		    "'%.256s' (%s). The skill's creator controls this list "
		    "(cli.deny in treg.json).", pat, why);
	else
		resp_error(resp, 403, "denied by the tool's cli.deny: pattern "
		    "'%.256s'. The skill's creator controls this list "
		    "(cli.deny in treg.json).", pat);
	return (-1);
}

/*
 * A run or grant refused because what its tool injects does not resolve
 * (resp holds the 502 and its detail): on record in /calls, as a denial
 * is, with refused_by "resolution".  When the record cannot be written
 * the answer is the audit's 503 instead.
 */
void
resolution_refuse(const struct auth *a, const char *tool, json_t *argv,
    const char *kind, struct vault_resp *resp)
{
	struct local_audit	 la;

	memset(&la, 0, sizeof(la));
	la.kind = kind;
	la.tool = tool;
	la.argv = argv;
	la.action = "DENY";
	la.status = resp->status;
	la.refused_by = "resolution";
	if (audit_local(a, &la) == -1)
		audit_unwritable(resp, strcmp(kind, "server_run") == 0 ?
		    "nothing was run" : "nothing was granted");
}

/*
 * A calls row begun for a request: who asked (the org, the person or
 * agent, its client), the tool and what was asked, the instance writing
 * it, and a refusal with its status.  Every calls row starts here: a
 * relayed call, a run's egress request and the local-run audit.
 */
void
audit_call_init(struct store_call *c, const struct auth *a, const char *tool,
    const char *method, const char *path, const char *refused_by,
    int status, const char *now)
{
	memset(c, 0, sizeof(*c));
	c->org_id = a->org_id;
	c->user_id = a->user_id;
	c->user_email = a->email;
	c->client = a->client;
	c->tool_name = tool;
	c->method = method;
	c->path = path;
	c->kind = "call";
	c->refused_by = refused_by;
	if (refused_by != NULL) {
		c->has_status = 1;
		c->status_code = status;
	}
	c->created_at = now;
	c->host = slots_instance();
}

int64_t
audit_local(const struct auth *a, const struct local_audit *la)
{
	struct store_call	 c;
	json_t			*masked = NULL;
	char			*argv = NULL;
	char			 now[32];
	int64_t			 id;
	int			 rc;

	if (la->argv != NULL) {
		masked = argv_mask(a->org_id, la->argv);
		if (masked == NULL || (argv = json_dumps(masked,
		    JSON_COMPACT)) == NULL)
			fatalx("%s: argv", __func__);
		json_decref(masked);
	}
	now_iso(now, sizeof(now));
	/* treg's audit shows the action where a call shows its method. */
	audit_call_init(&c, a, la->tool, la->action, la->path,
	    la->refused_by, la->status, now);
	c.has_status = 1;
	c.status_code = la->status;
	c.kind = la->kind != NULL ? la->kind : "local_run";
	c.action = la->action;
	c.argv = argv;
	c.has_exit = la->has_exit;
	c.exit_code = la->exit_code;
	c.verdict = la->verdict;
	c.grant_id = la->grant_id;
	rc = store_call_insert(&c, &id);
	free(argv);
	return (rc == 0 ? id : -1);
}
