/*
 * Logging for every tregd process.  The parent writes to syslog or, with
 * -d, to stderr; children cannot reach syslog after chroot, so they hand
 * each formatted line to a sink (the parent channel) set by log_setsink().
 *
 * Never log a secret, a token or a request body.
 */

#ifndef LOG_H
#define LOG_H

#include <stdarg.h>
#include <syslog.h>

#ifndef __dead
#define __dead __attribute__((__noreturn__))
#endif
#ifndef __unused
#define __unused __attribute__((__unused__))
#endif

typedef void (*log_sink_fn)(int, const char *);

void	log_init(int, int);		/* foreground, verbose */
void	log_procinit(const char *);
void	log_setverbose(int);
int	log_getverbose(void);
void	log_setsink(log_sink_fn);
void	log_emit(int, const char *);	/* parent: write one line */
void	log_warn(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_warnx(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_info(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_debug(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	logit(int, const char *, ...)
	    __attribute__((__format__ (printf, 2, 3)));
void	vlog(int, const char *, va_list)
	    __attribute__((__format__ (printf, 2, 0)));
__dead void fatal(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
__dead void fatalx(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));

#endif /* LOG_H */
