/*
 * A fresh PostgreSQL database for a unit test case: see pgdb.h.
 */

#include <sys/types.h>

#include <atf-c.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pgdb.h"
#include "store.h"

void
pgdb_create(const atf_tc_t *tc, const char *prefix, char *ci, size_t len)
{
	char		 admin[512], sql[128], dbname[64];
	const char	*host = atf_tc_get_config_var(tc, "pg_host");
	PGconn		*c;
	PGresult	*res;

	snprintf(admin, sizeof(admin), "host=%s user=tregd dbname=postgres",
	    host);
	c = PQconnectdb(admin);
	ATF_REQUIRE_MSG(PQstatus(c) == CONNECTION_OK, "%s",
	    PQerrorMessage(c));
	/* pid and time: a pid of an earlier run may come back. */
	snprintf(dbname, sizeof(dbname), "%s_%ld_%lld", prefix,
	    (long)getpid(), (long long)time(NULL));
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", dbname);
	res = PQexec(c, sql);
	ATF_REQUIRE_MSG(PQresultStatus(res) == PGRES_COMMAND_OK, "%s",
	    PQerrorMessage(c));
	PQclear(res);
	PQfinish(c);
	snprintf(ci, len, "host=%s user=tregd dbname=%s", host, dbname);
}

int
pgdb_store_open(const atf_tc_t *tc, const char *prefix)
{
	static char		 conninfo[512];
	struct store_params	 p;
	char			 err[STORE_ERROR_MAX];
	int			 on_pg;

	memset(&p, 0, sizeof(p));
	on_pg = atf_tc_has_config_var(tc, "engine") &&
	    strcmp(atf_tc_get_config_var(tc, "engine"), "pg") == 0;
	if (on_pg) {
		ATF_REQUIRE(atf_tc_has_config_var(tc, "pg_host"));
		pgdb_create(tc, prefix, conninfo, sizeof(conninfo));
		p.engine = STORE_POSTGRESQL;
		p.conninfo = conninfo;
	} else {
		p.engine = STORE_SQLITE;
		p.path = ":memory:";
	}
	err[0] = '\0';
	ATF_REQUIRE_MSG(store_open(&p, err, sizeof(err)) == 0, "%s", err);
	return (on_pg);
}
