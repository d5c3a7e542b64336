/*
 * The service manager's readiness protocol (sd_notify(3)), written out
 * rather than linked: one datagram to the AF_UNIX socket named by
 * $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace).
 * libsystemd would bring a dozen libraries (compression, crypto) into
 * the root parent for these few lines; the liblzma backdoor reached sshd
 * exactly that way.  Without $NOTIFY_SOCKET every call does nothing.
 */

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tregd.h"
#include "parent.h"

static struct sockaddr_un	 notify_sun;
static socklen_t		 notify_len;
static int			 notify_fd = -1;

/*
 * Take $NOTIFY_SOCKET out of the environment, so no child inherits it,
 * and open the socket while the filesystem is still ours.
 */
void
notify_init(void)
{
	const char	*path;
	size_t		 len;

	if ((path = getenv("NOTIFY_SOCKET")) == NULL)
		return;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len < 2 ||
	    len >= sizeof(notify_sun.sun_path)) {
		log_warnx("NOTIFY_SOCKET: not a socket path, ignored");
		unsetenv("NOTIFY_SOCKET");
		return;
	}
	memset(&notify_sun, 0, sizeof(notify_sun));
	notify_sun.sun_family = AF_UNIX;
	memcpy(notify_sun.sun_path, path, len);
	if (path[0] == '@')
		notify_sun.sun_path[0] = '\0';	/* abstract: no NUL at end */
	notify_len = offsetof(struct sockaddr_un, sun_path) + len +
	    (path[0] == '/');
	unsetenv("NOTIFY_SOCKET");
	if ((notify_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		log_warn("NOTIFY_SOCKET: socket");
}

/* Tell the service manager; a manager that is gone is not our problem. */
void
notify_send(const char *state)
{
	if (notify_fd == -1)
		return;
	if (sendto(notify_fd, state, strlen(state), MSG_NOSIGNAL,
	    (struct sockaddr *)&notify_sun, notify_len) == -1)
		log_warn("NOTIFY_SOCKET: %s", state);
	else
		log_debug("told the service manager %s", state);
}
