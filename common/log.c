/*
 * Logging: log_* and fatal* in the style of the OpenBSD daemons.
 *
 * The parent owns the output (syslog, or stderr in the foreground).  A
 * child installs a sink with log_setsink() and every line it logs is
 * handed to the sink, which forwards it to the parent over imsg.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static int		 log_foreground;
static int		 log_verbose;
static const char	*log_procname = "parent";
static log_sink_fn	 log_sink;

void
log_init(int foreground, int verbose)
{
	log_foreground = foreground;
	log_verbose = verbose;
	if (!foreground)
		openlog("tregd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	tzset();
}

void
log_procinit(const char *name)
{
	if (name != NULL)
		log_procname = name;
}

void
log_setverbose(int v)
{
	log_verbose = v;
}

int
log_getverbose(void)
{
	return (log_verbose);
}

void
log_setsink(log_sink_fn fn)
{
	log_sink = fn;
}

/* Write one finished line where the parent's log goes. */
void
log_emit(int pri, const char *line)
{
	if (log_foreground) {
		fprintf(stderr, "%s\n", line);
		fflush(stderr);
	} else
		syslog(pri, "%s", line);
}

void
vlog(int pri, const char *fmt, va_list ap)
{
	char	 msg[1024], line[1100];
	int	 saved_errno = errno;

	if (pri == LOG_DEBUG && log_verbose < 1)
		goto out;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	snprintf(line, sizeof(line), "%s: %s", log_procname, msg);
	if (log_sink != NULL)
		log_sink(pri, line);
	else
		log_emit(pri, line);
 out:
	errno = saved_errno;
}

void
logit(int pri, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vlog(pri, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *emsg, ...)
{
	char	 fmt[512];
	va_list	 ap;
	int	 saved_errno = errno;

	if (emsg == NULL)
		logit(LOG_ERR, "%s", strerror(saved_errno));
	else {
		va_start(ap, emsg);
		if (snprintf(fmt, sizeof(fmt), "%s: %s", emsg,
		    strerror(saved_errno)) < 0)
			vlog(LOG_ERR, emsg, ap);
		else
			vlog(LOG_ERR, fmt, ap);
		va_end(ap);
	}
	errno = saved_errno;
}

void
log_warnx(const char *emsg, ...)
{
	va_list	 ap;

	va_start(ap, emsg);
	vlog(LOG_ERR, emsg, ap);
	va_end(ap);
}

void
log_info(const char *emsg, ...)
{
	va_list	 ap;

	va_start(ap, emsg);
	vlog(LOG_INFO, emsg, ap);
	va_end(ap);
}

void
log_debug(const char *emsg, ...)
{
	va_list	 ap;

	va_start(ap, emsg);
	vlog(LOG_DEBUG, emsg, ap);
	va_end(ap);
}

static __dead void
vfatalc(int code, const char *emsg, va_list ap)
{
	char	 s[512];
	const char *sep;

	if (emsg != NULL) {
		vsnprintf(s, sizeof(s), emsg, ap);
		sep = ": ";
	} else {
		s[0] = '\0';
		sep = "";
	}
	if (code)
		logit(LOG_CRIT, "fatal: %s%s%s", s, sep, strerror(code));
	else
		logit(LOG_CRIT, "fatal: %s", s);
	exit(1);
}

void
fatal(const char *emsg, ...)
{
	va_list	 ap;

	va_start(ap, emsg);
	vfatalc(errno, emsg, ap);
	va_end(ap);
}

void
fatalx(const char *emsg, ...)
{
	va_list	 ap;

	va_start(ap, emsg);
	vfatalc(0, emsg, ap);
	va_end(ap);
}
