/*
 * The exec process (root with reduced capabilities, no network).
 *
 * It takes run orders from the vault, forks each CLI child into its own
 * session as the run user with limits and filters, reads its output,
 * redacts it and streams the redacted bytes to the frontend.  Raw output
 * never leaves this process.  It keeps a small address space so fork
 * stays cheap.
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <event.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "sandbox.h"
#include "tregd.h"

static struct tregd_conf	 exec_conf;
static struct imsgev		 iev_parent, iev_vault, iev_frontend;
static int			 have_vault, have_frontend;
static struct event		 ev_sigterm, ev_sigint;

static void	exec_config(struct imsg *);
static void	exec_dispatch_parent(struct imsgev *, struct imsg *);
static void	exec_dispatch_vault(struct imsgev *, struct imsg *);
static void	exec_dispatch_frontend(struct imsgev *, struct imsg *);
static void	exec_closed(struct imsgev *);
static void	exec_sig(int, short, void *);

__dead void
exec_main(int debug, int verbose)
{
	struct sandbox_paths	 paths;

	proc_child_init(PROC_EXEC, &iev_parent, debug, verbose,
	    exec_dispatch_parent, exec_closed, exec_config);
	if (!have_vault || !have_frontend)
		fatalx("exec: incomplete configuration");

	/* Run directories live here; Landlock needs it to exist. */
	if (mkdir(exec_conf.run_dir, 0711) == -1 && errno != EEXIST)
		fatal("mkdir %s", exec_conf.run_dir);
	if (chmod(exec_conf.run_dir, 0711) == -1)
		fatal("chmod %s", exec_conf.run_dir);

	sandbox_nodump();
	memset(&paths, 0, sizeof(paths));
	paths.run_dir = exec_conf.run_dir;
	paths.run_path = exec_conf.run_path;
	sandbox_confine(SANDBOX_EXEC, &paths);

	signal(SIGPIPE, SIG_IGN);
	signal_set(&ev_sigterm, SIGTERM, exec_sig, NULL);
	signal_set(&ev_sigint, SIGINT, exec_sig, NULL);
	signal_add(&ev_sigterm, NULL);
	signal_add(&ev_sigint, NULL);

	imsgev_drain(&iev_parent);
	log_debug("ready");
	event_dispatch();
	fatalx("event loop ended");
}

static void
exec_sig(int sig, short event, void *arg)
{
	exit(0);
}

static void
exec_config(struct imsg *imsg)
{
	uint32_t	 peer;

	switch (imsg->hdr.type) {
	case IMSG_CONF:
		proc_conf_recv(imsg, &exec_conf);
		break;
	case IMSG_CONF_PEER:
		if (imsg->fd == -1 || imsg->datalen != sizeof(peer))
			fatalx("bad IMSG_CONF_PEER");
		memcpy(&peer, imsg->data, sizeof(peer));
		if (peer == PROC_VAULT && !have_vault) {
			imsgev_init(&iev_vault, imsg->fd, PROC_VAULT, "vault",
			    exec_dispatch_vault, exec_closed, NULL);
			have_vault = 1;
		} else if (peer == PROC_FRONTEND && !have_frontend) {
			imsgev_init(&iev_frontend, imsg->fd, PROC_FRONTEND,
			    "frontend", exec_dispatch_frontend, exec_closed,
			    NULL);
			have_frontend = 1;
		} else
			fatalx("bad IMSG_CONF_PEER %u", peer);
		imsg->fd = -1;
		break;
	default:
		fatalx("%s: bad imsg %u from parent", __func__,
		    imsg->hdr.type);
	}
}

static void
exec_dispatch_parent(struct imsgev *iev, struct imsg *imsg)
{
	int	 v;

	switch (imsg->hdr.type) {
	case IMSG_CONF:
		proc_conf_recv(imsg, &exec_conf);
		break;
	case IMSG_CONF_END:
		break;
	case IMSG_LOG_VERBOSE:
		if (imsg->datalen != sizeof(v))
			fatalx("bad IMSG_LOG_VERBOSE");
		memcpy(&v, imsg->data, sizeof(v));
		log_setverbose(v);
		break;
	default:
		fatalx("%s: bad imsg %u from parent", __func__,
		    imsg->hdr.type);
	}
}

static void
exec_dispatch_vault(struct imsgev *iev, struct imsg *imsg)
{
	fatalx("%s: bad imsg %u from vault", __func__, imsg->hdr.type);
}

static void
exec_dispatch_frontend(struct imsgev *iev, struct imsg *imsg)
{
	fatalx("%s: bad imsg %u from frontend", __func__, imsg->hdr.type);
}

static void
exec_closed(struct imsgev *iev)
{
	fatalx("lost the channel to %s", iev->name);
}
