/*
 * The PostgreSQL connection made again after a server restart, a
 * failover or a network cut (tregd.conf(5), "database postgresql").
 *
 * The vault is confined by then (chroot, seccomp, Landlock): it cannot
 * read a service file, a password file or /etc/hosts, and it may only
 * connect to the one server.  So the parameters of the first connection
 * are pinned when it succeeds (PQconninfo: the password, TLS settings,
 * user and database as libpq used them) with the server it reached: the
 * address for TCP (no name to resolve), the socket directory for a Unix
 * socket (bind-mounted into the chroot by vault.c, store_reach_dir()).
 *
 * While the connection is lost every statement fails at once and the
 * request answers 503 (store_unavailable()); a new connection is made
 * without blocking the vault's loop (PQconnectStart, PQconnectPoll on
 * the event loop), after 250 ms, then twice as long each time up to 8 s.
 * Once made, the statements are prepared again on first use.
 */

#include <sys/types.h>

#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tregd.h"
#include "log.h"
#include "store_pg.h"

#define PG_PARAMS_MAX		64
#define PG_BACKOFF_MIN_MS	250
#define PG_BACKOFF_MAX_MS	8000
#define PG_CONNECT_TIMEOUT_S	10	/* one attempt, if nothing answers */

static char		*pg_keys_pin[PG_PARAMS_MAX + 1];
static char		*pg_vals_pin[PG_PARAMS_MAX + 1];
static PGconn		*pg_next;	/* the connection being made */
static struct event	 pg_retry_ev, pg_poll_ev;
static int		 pg_backoff_ms;
static int		 pg_attempts;
static time_t		 pg_lost_at;

static int	 pg_pin_add(const char *, const char *);
static void	 pg_retry(int, short, void *);
static void	 pg_retry_later(void);
static void	 pg_poll(PostgresPollingStatusType);
static void	 pg_poll_cb(int, short, void *);
static void	 pg_adopt(void);

/*
 * What the next connection uses: every parameter libpq used for this
 * one, the host pinned to the server reached.  0, or -1 (too many).
 */
int
pg_pin(PGconn *conn)
{
	PQconninfoOption	*opts, *o;
	const char		*host, *addr;
	int			 rc = 0;

	pg_unpin();
	if ((opts = PQconninfo(conn)) == NULL)
		return (-1);
	for (o = opts; rc == 0 && o->keyword != NULL; o++) {
		if (o->val == NULL || *o->val == '\0' ||
		    strcmp(o->keyword, "host") == 0 ||
		    strcmp(o->keyword, "hostaddr") == 0 ||
		    strcmp(o->keyword, "port") == 0)
			continue;
		rc = pg_pin_add(o->keyword, o->val);
	}
	PQconninfoFree(opts);
	host = PQhost(conn);
	addr = PQhostaddr(conn);
	if (rc == 0 && host != NULL && *host != '\0')
		rc = pg_pin_add("host", host);
	/* A name is resolved now or never: the chroot has no resolver. */
	if (rc == 0 && host != NULL && *host != '/' && addr != NULL &&
	    *addr != '\0')
		rc = pg_pin_add("hostaddr", addr);
	if (rc == 0 && PQport(conn) != NULL && *PQport(conn) != '\0')
		rc = pg_pin_add("port", PQport(conn));
	if (rc == -1)
		pg_unpin();
	return (rc);
}

static int
pg_pin_add(const char *key, const char *val)
{
	size_t	 i;

	for (i = 0; pg_keys_pin[i] != NULL; i++)
		;
	if (i >= PG_PARAMS_MAX)
		return (-1);
	if ((pg_keys_pin[i] = strdup(key)) == NULL ||
	    (pg_vals_pin[i] = strdup(val)) == NULL)
		fatal("%s", __func__);
	return (0);
}

/* The values hold the password: zeroed. */
void
pg_unpin(void)
{
	size_t	 i;

	for (i = 0; pg_keys_pin[i] != NULL; i++) {
		freezero(pg_vals_pin[i], strlen(pg_vals_pin[i]) + 1);
		free(pg_keys_pin[i]);
		pg_keys_pin[i] = pg_vals_pin[i] = NULL;
	}
	if (pg_next != NULL) {
		PQfinish(pg_next);
		pg_next = NULL;
	}
}

int
pg_reach(struct store_reach *r)
{
	const char	*host, *port;
	const char	*errstr;

	host = PQhost(pg_conn);
	port = PQport(pg_conn);
	if (host != NULL && *host == '/') {
		if (strlcpy(r->socket_dir, host, sizeof(r->socket_dir)) >=
		    sizeof(r->socket_dir))
			r->socket_dir[0] = '\0';
	} else if (port != NULL) {
		r->tcp_port = strtonum(port, 1, 65535, &errstr);
	}
	return (1);
}

/* The socket directory moved (a bind mount in the vault's chroot). */
void
pg_reach_dir(const char *dir)
{
	size_t	 i;

	for (i = 0; pg_keys_pin[i] != NULL; i++)
		if (strcmp(pg_keys_pin[i], "host") == 0) {
			free(pg_vals_pin[i]);
			if ((pg_vals_pin[i] = strdup(dir)) == NULL)
				fatal("%s", __func__);
		}
}

/* pg_fail() saw the connection go: answer 503 and make another. */
void
pg_lost_start(void)
{
	log_warnx("database: the connection to PostgreSQL is lost (%s); "
	    "requests answer 503 while it is made again", pg_error());
	pg_lost_at = time(NULL);
	pg_attempts = 0;
	pg_backoff_ms = PG_BACKOFF_MIN_MS;
	if (proc_base == NULL || pg_keys_pin[0] == NULL)
		fatalx("database: connection to PostgreSQL lost");
	evtimer_set(&pg_retry_ev, pg_retry, NULL);
	event_base_set(proc_base, &pg_retry_ev);
	pg_retry_later();
}

static void
pg_retry_later(void)
{
	struct timeval	 tv;

	tv.tv_sec = pg_backoff_ms / 1000;
	tv.tv_usec = (pg_backoff_ms % 1000) * 1000;
	evtimer_add(&pg_retry_ev, &tv);
	pg_backoff_ms = pg_backoff_ms * 2 > PG_BACKOFF_MAX_MS ?
	    PG_BACKOFF_MAX_MS : pg_backoff_ms * 2;
}

static void
pg_retry(int fd, short event, void *arg)
{
	pg_attempts++;
	pg_next = PQconnectStartParams((const char *const *)pg_keys_pin,
	    (const char *const *)pg_vals_pin, 0);
	if (pg_next == NULL || PQstatus(pg_next) == CONNECTION_BAD) {
		pg_poll(PGRES_POLLING_FAILED);
		return;
	}
	pg_poll(PGRES_POLLING_WRITING);
}

/* libpq says what it waits for; its socket may change between steps. */
static void
pg_poll(PostgresPollingStatusType st)
{
	struct timeval	 tv = { PG_CONNECT_TIMEOUT_S, 0 };
	short		 what;

	switch (st) {
	case PGRES_POLLING_OK:
		pg_adopt();
		return;
	case PGRES_POLLING_READING:
	case PGRES_POLLING_WRITING:
		what = st == PGRES_POLLING_READING ? EV_READ : EV_WRITE;
		event_set(&pg_poll_ev, PQsocket(pg_next), what, pg_poll_cb,
		    NULL);
		event_base_set(proc_base, &pg_poll_ev);
		event_add(&pg_poll_ev, &tv);
		return;
	default:
		break;
	}
	/* Failed: say why once, then only at debug level. */
	if (pg_attempts == 1 || pg_backoff_ms >= PG_BACKOFF_MAX_MS)
		log_debug("database: PostgreSQL not reached yet: %.*s",
		    pg_next != NULL ? (int)strcspn(PQerrorMessage(pg_next),
		    "\n") : 13, pg_next != NULL ? PQerrorMessage(pg_next) :
		    "out of memory");
	if (pg_next != NULL)
		PQfinish(pg_next);
	pg_next = NULL;
	pg_retry_later();
}

static void
pg_poll_cb(int fd, short event, void *arg)
{
	if (event & EV_TIMEOUT) {
		pg_poll(PGRES_POLLING_FAILED);
		return;
	}
	pg_poll(PQconnectPoll(pg_next));
}

/* The new connection replaces the lost one once its session is set. */
static void
pg_adopt(void)
{
	PQfinish(pg_conn);
	pg_conn = pg_next;
	pg_next = NULL;
	if (pg_session() == -1) {
		PQfinish(pg_conn);
		pg_conn = NULL;
		pg_retry_later();
		return;
	}
	pg_found();
	log_info("database: connected to PostgreSQL again after %lld s "
	    "and %d attempts", (long long)(time(NULL) - pg_lost_at),
	    pg_attempts);
}
