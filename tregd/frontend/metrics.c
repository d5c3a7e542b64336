/*
 * GET /metrics (frontend): the Prometheus text format on the `metrics
 * listen on' sockets.
 *
 * The frontend counts its own requests as http.c finishes them (route
 * pattern, status, latency; the refusals among them by a short reason
 * made of the status and route, never of a detail text).  The vault and
 * exec send their running totals every second (vault_metrics.c,
 * exec_metrics.c); the frontend keeps the last of each and when it came,
 * which is also how it tells that the process is up.  Nothing here waits
 * on another process: a scrape is answered from memory.
 */

#include <sys/types.h>
#include <sys/queue.h>

#include <event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "http.h"
#include "tregd.h"
#include "frontend.h"

#define MROUTES_MAX	64	/* route patterns: tregd's own strings */
#define MCODES_MAX	512	/* (route, status) pairs */
#define HTTP_BUCKETS	11
#define REPORT_STALE	3	/* seconds without a report: down */

static const double http_le[HTTP_BUCKETS] = {
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};

struct mroute {
	const char	*name;		/* a route pattern, or "-" */
	uint64_t	 le[HTTP_BUCKETS];	/* per bucket, not cumulative */
	uint64_t	 count;
	double		 sum;
};

struct mcode {
	uint16_t	 route;		/* index in mroutes */
	uint16_t	 status;
	uint64_t	 n;
};

/* The refusals the API gives, by a stable reason. */
enum mreason {
	MR_UNAUTHORIZED,	/* 401: no token, or not a valid one */
	MR_FORBIDDEN,		/* 403: the role or the policy says no */
	MR_NOT_FOUND,		/* 404 */
	MR_CONFLICT,		/* 409 */
	MR_INVALID,		/* 422: the request's values */
	MR_RUN_SLOTS,		/* 429 on POST /run: no run slot free */
	MR_CONNECTIONS,		/* 429: too many connections from a client */
	MR_RATE,		/* 429 elsewhere */
	MR_MAX
};
static const char *const mreason_names[MR_MAX] = {
	"unauthorized", "forbidden", "not_found", "conflict", "invalid",
	"run_slots", "connections", "rate_limited"
};

static const char *const outcome_names[RUN_INTERRUPTED + 1] = {
	"ok", "failed", "timed_out", "cancelled", "interrupted"
};

static struct mroute		 mroutes[MROUTES_MAX];
static int			 nmroutes;
static struct mcode		 mcodes[MCODES_MAX];
static int			 nmcodes;
static uint64_t			 refusals[MR_MAX];
static struct metrics_vault	 mv;
static struct metrics_exec	 mx;
static struct timespec		 mx_at;
static int			 mx_have;
/* Each vault worker's last report; mv is their sum. */
static struct metrics_vault	 mvs[VAULT_WORKERS_MAX];
static struct timespec		 mvs_at[VAULT_WORKERS_MAX];
static int			 mvs_have[VAULT_WORKERS_MAX];
static int			 nworkers = 1;

static int	mroute_get(const char *);
static int	mreason(const char *, int);
static void	text_http(struct evbuffer *);
static void	text_runs(struct evbuffer *);
static void	text_head(struct evbuffer *, const char *, const char *,
		    const char *);
static int	report_fresh(int, const struct timespec *);

/* http.c: a request was answered (start: when its head began; or NULL). */
void
metrics_http(const char *route, int status, const struct timespec *start)
{
	struct timespec	 now;
	struct mroute	*mr;
	double		 s = 0;
	int		 r, i;

	if (route == NULL)
		route = "-";
	if ((r = mroute_get(route)) == -1)
		return;
	mr = &mroutes[r];
	if (start != NULL) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		s = (now.tv_sec - start->tv_sec) +
		    (now.tv_nsec - start->tv_nsec) / 1e9;
		if (s < 0)
			s = 0;
	}
	for (i = 0; i < HTTP_BUCKETS; i++)
		if (s <= http_le[i]) {
			mr->le[i]++;
			break;
		}
	mr->count++;
	mr->sum += s;

	for (i = 0; i < nmcodes; i++)
		if (mcodes[i].route == r && mcodes[i].status == status)
			break;
	if (i == nmcodes) {
		if (nmcodes == MCODES_MAX)
			goto refusal;
		mcodes[nmcodes].route = r;
		mcodes[nmcodes++].status = status;
	}
	mcodes[i].n++;
 refusal:
	if ((i = mreason(route, status)) != -1)
		refusals[i]++;
}

/* The route patterns are tregd's own constant strings, never a path. */
static int
mroute_get(const char *route)
{
	int	 i;

	for (i = 0; i < nmroutes; i++)
		if (mroutes[i].name == route ||
		    strcmp(mroutes[i].name, route) == 0)
			return (i);
	if (nmroutes == MROUTES_MAX)
		return (-1);
	mroutes[nmroutes].name = route;
	return (nmroutes++);
}

static int
mreason(const char *route, int status)
{
	switch (status) {
	case 401:
		return (MR_UNAUTHORIZED);
	case 403:
		return (MR_FORBIDDEN);
	case 404:
		return (MR_NOT_FOUND);
	case 409:
		return (MR_CONFLICT);
	case 422:
		return (MR_INVALID);
	case 429:
		if (strcmp(route, "/run") == 0)
			return (MR_RUN_SLOTS);
		if (strcmp(route, "-") == 0)
			return (MR_CONNECTIONS);
		return (MR_RATE);
	}
	return (-1);
}

void
metrics_vault_workers(int n)
{
	if (n < 1 || n > VAULT_WORKERS_MAX)
		fatalx("%s: %d workers", __func__, n);
	nworkers = n;
}

/* IMSG_METRICS_VAULT, from vault worker w's channel. */
void
metrics_vault_report(int w, struct imsg *imsg)
{
	if (imsg->datalen != sizeof(mvs[w]) || w < 0 || w >= nworkers)
		fatalx("bad IMSG_METRICS_VAULT from vault");
	memcpy(&mvs[w], imsg->data, sizeof(mvs[w]));
	clock_gettime(CLOCK_MONOTONIC, &mvs_at[w]);
	mvs_have[w] = 1;
}

/* The workers' counters added up; 1 when every worker reported lately. */
static int
metrics_vault_sum(void)
{
	int	 w, i, up = 1;

	memset(&mv, 0, sizeof(mv));
	for (w = 0; w < nworkers; w++) {
		if (!report_fresh(mvs_have[w], &mvs_at[w]))
			up = 0;
		for (i = 0; i <= RUN_INTERRUPTED; i++)
			mv.runs[i] += mvs[w].runs[i];
		for (i = 0; i < METRICS_RUN_BUCKETS; i++)
			mv.run_le[i] += mvs[w].run_le[i];
		mv.run_ms += mvs[w].run_ms;
		mv.redactions += mvs[w].redactions;
		mv.db_errors += mvs[w].db_errors;
		mv.slots_in_use += mvs[w].slots_in_use;
		if (mvs[w].slots_max > mv.slots_max)
			mv.slots_max = mvs[w].slots_max;
		mv.requests += mvs[w].requests;
	}
	return (up);
}

/* IMSG_METRICS_EXEC, from exec's channel. */
void
metrics_exec_report(struct imsg *imsg)
{
	if (imsg->datalen != sizeof(mx))
		fatalx("bad IMSG_METRICS_EXEC from exec");
	memcpy(&mx, imsg->data, sizeof(mx));
	clock_gettime(CLOCK_MONOTONIC, &mx_at);
	mx_have = 1;
}

static int
report_fresh(int have, const struct timespec *at)
{
	struct timespec	 now;

	if (!have)
		return (0);
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - at->tv_sec <= REPORT_STALE);
}

static void
text_head(struct evbuffer *eb, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(eb, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* Every counter, in the Prometheus text format (GET /metrics). */
void
metrics_text(struct evbuffer *eb)
{
	int	 i;

	text_head(eb, "tregd_build_info", "gauge", "The version of tregd.");
	evbuffer_add_printf(eb, "tregd_build_info{version=\"%s\"} 1\n",
	    TREGD_VERSION);
	text_head(eb, "tregd_process_up", "gauge",
	    "Whether a tregd process is up (vault and exec: reported within "
	    "the last 3 s).");
	/* The frontend exits when its parent's channel closes. */
	evbuffer_add_printf(eb, "tregd_process_up{process=\"parent\"} 1\n"
	    "tregd_process_up{process=\"frontend\"} 1\n"
	    "tregd_process_up{process=\"vault\"} %d\n"
	    "tregd_process_up{process=\"exec\"} %d\n",
	    metrics_vault_sum(), report_fresh(mx_have, &mx_at));
	text_head(eb, "tregd_vault_requests_total", "counter",
	    "API requests each vault worker answered.");
	for (i = 0; i < nworkers; i++)
		evbuffer_add_printf(eb, "tregd_vault_requests_total"
		    "{worker=\"%d\"} %llu\n", i,
		    (unsigned long long)mvs[i].requests);
	text_http(eb);
	text_head(eb, "tregd_refusals_total", "counter",
	    "API answers 401, 403, 404, 409, 422 and 429, by reason.");
	for (i = 0; i < MR_MAX; i++)
		evbuffer_add_printf(eb, "tregd_refusals_total{reason=\"%s\"} "
		    "%llu\n", mreason_names[i],
		    (unsigned long long)refusals[i]);
	text_runs(eb);
	text_head(eb, "tregd_db_errors_total", "counter",
	    "Database statements that failed.");
	evbuffer_add_printf(eb, "tregd_db_errors_total %llu\n",
	    (unsigned long long)mv.db_errors);
	/* /call's answers: the upstream's codes and tregd's refusals. */
	text_head(eb, "tregd_relay_calls_total", "counter",
	    "Calls through the relay (/call), by status.");
	for (i = 0; i < nmcodes; i++)
		if (strcmp(mroutes[mcodes[i].route].name, "/call") == 0)
			evbuffer_add_printf(eb, "tregd_relay_calls_total"
			    "{code=\"%u\"} %llu\n", mcodes[i].status,
			    (unsigned long long)mcodes[i].n);
}

static void
text_http(struct evbuffer *eb)
{
	struct mroute	*mr;
	uint64_t	 cum;
	int		 i, j;

	text_head(eb, "tregd_http_requests_total", "counter",
	    "API requests answered, by route pattern and status.");
	for (i = 0; i < nmcodes; i++)
		evbuffer_add_printf(eb, "tregd_http_requests_total"
		    "{route=\"%s\",code=\"%u\"} %llu\n",
		    mroutes[mcodes[i].route].name, mcodes[i].status,
		    (unsigned long long)mcodes[i].n);
	text_head(eb, "tregd_http_request_duration_seconds", "histogram",
	    "From a request's first byte to its answer, by route pattern.");
	for (i = 0; i < nmroutes; i++) {
		mr = &mroutes[i];
		for (j = 0, cum = 0; j < HTTP_BUCKETS; j++) {
			cum += mr->le[j];
			evbuffer_add_printf(eb,
			    "tregd_http_request_duration_seconds_bucket"
			    "{route=\"%s\",le=\"%g\"} %llu\n", mr->name,
			    http_le[j], (unsigned long long)cum);
		}
		evbuffer_add_printf(eb,
		    "tregd_http_request_duration_seconds_bucket"
		    "{route=\"%s\",le=\"+Inf\"} %llu\n"
		    "tregd_http_request_duration_seconds_sum{route=\"%s\"} "
		    "%.6f\n"
		    "tregd_http_request_duration_seconds_count{route=\"%s\"} "
		    "%llu\n", mr->name, (unsigned long long)mr->count, mr->name,
		    mr->sum, mr->name, (unsigned long long)mr->count);
	}
}

static void
text_runs(struct evbuffer *eb)
{
	uint64_t	 cum, total = 0;
	int		 i;

	text_head(eb, "tregd_runs_total", "counter",
	    "Server runs ended, by outcome.");
	for (i = 0; i <= RUN_INTERRUPTED; i++) {
		evbuffer_add_printf(eb, "tregd_runs_total{outcome=\"%s\"} "
		    "%llu\n", outcome_names[i], (unsigned long long)mv.runs[i]);
		total += mv.runs[i];
	}
	text_head(eb, "tregd_run_duration_seconds", "histogram",
	    "How long the server runs took.");
	for (i = 0, cum = 0; i < METRICS_RUN_BUCKETS; i++) {
		cum += mv.run_le[i];
		evbuffer_add_printf(eb, "tregd_run_duration_seconds_bucket"
		    "{le=\"%g\"} %llu\n", metrics_run_le[i],
		    (unsigned long long)cum);
	}
	evbuffer_add_printf(eb, "tregd_run_duration_seconds_bucket"
	    "{le=\"+Inf\"} %llu\ntregd_run_duration_seconds_sum %.3f\n"
	    "tregd_run_duration_seconds_count %llu\n",
	    (unsigned long long)total, mv.run_ms / 1000.0,
	    (unsigned long long)total);
	text_head(eb, "tregd_run_slots_in_use", "gauge",
	    "Server runs holding a slot.");
	evbuffer_add_printf(eb, "tregd_run_slots_in_use %u\n",
	    mv.slots_in_use);
	text_head(eb, "tregd_run_slots", "gauge",
	    "Server run slots (run slots).");
	evbuffer_add_printf(eb, "tregd_run_slots %u\n", mv.slots_max);
	text_head(eb, "tregd_exec_runs", "gauge",
	    "Runs exec holds: started, their output not all sent.");
	evbuffer_add_printf(eb, "tregd_exec_runs %u\n", mx.running);
	text_head(eb, "tregd_redactions_total", "counter",
	    "Secret occurrences masked in server run output.");
	evbuffer_add_printf(eb, "tregd_redactions_total %llu\n",
	    (unsigned long long)mv.redactions);
}
