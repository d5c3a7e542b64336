/*
 * exec's report for GET /metrics: the runs it holds, every second to the
 * frontend as one struct metrics_exec (also how the frontend knows exec
 * is up).
 */

#include <sys/types.h>

#include <event.h>

#include "proc.h"
#include "tregd.h"
#include "exec.h"

static struct metrics_exec	 xm;
static struct imsgev		*xm_iev;
static struct event		 ev_report;

static void	exec_metrics_send(int, short, void *);

void
exec_metrics_start(struct imsgev *frontend)
{
	xm_iev = frontend;
	evtimer_set(&ev_report, exec_metrics_send, NULL);
	exec_metrics_send(0, 0, NULL);
}

static void
exec_metrics_send(int fd, short event, void *arg)
{
	struct timeval	 tv = { 1, 0 };

	if (imsgev_compose(xm_iev, IMSG_METRICS_EXEC, 0, -1, &xm,
	    sizeof(xm)) == -1)
		fatal("%s: send to frontend", __func__);
	evtimer_add(&ev_report, &tv);
}

/* A run was taken (1) or let go (-1). */
void
exec_metrics_running(int delta)
{
	if (delta < 0 && xm.running == 0)
		return;
	xm.running += delta;
}
