/*
 * The parent process (root).  It reads the configuration, binds the
 * listening and control sockets, starts each child by fork and re-exec
 * with its channel on fd 3, hands it its configuration and descriptors,
 * writes the children's log lines, reloads on SIGHUP and supervises: a
 * core child that dies takes the daemon down with a log line naming it.
 * It never touches client bytes, the database or a secret.
 */

#include <sys/types.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "proc.h"
#include "tregd.h"
#include "parent.h"

#define TLS_FILE_MAX	(1024 * 1024)

struct child {
	enum tregd_proc		 id;
	int			 worker;	/* a vault's number, else -1 */
	const char		*name;		/* "frontend", "vault 0" ... */
	pid_t			 pid;
	time_t			 started;
	struct imsgev		 iev;
	int			 exited;
	int			 ready;		/* sent IMSG_READY */
};

static struct tregd_conf	 parent_conf;
static const char		*parent_conffile;
static char			 self_path[PATH_MAX];
/* frontend, vault 0 .. vault N-1, exec: in the order they start. */
static struct child		 children[3 + VAULT_WORKERS_MAX];
static int			 nchildren;
static struct child		*child_frontend, *child_exec, *child_relay;
static struct child		*child_vault[VAULT_WORKERS_MAX];
static int			 nworkers;
static int			 slots_fd = -1;	/* the workers' run slots */
static int			 listen_fds[CONF_LISTEN_MAX];
static int			 metrics_fds[CONF_LISTEN_MAX];
static int			 control_fd = -1;
static gid_t			 control_gid = (gid_t)-1;	/* socket group */
static struct stat		 control_pidns;	/* the daemon's pid namespace */
static struct event		 ev_control;
static int			 control_next;	/* the next tregctl's worker */
static int			 parent_debug, parent_verbose;
static int			 shutting_down;
static struct event		 ev_sigterm, ev_sigint, ev_sighup, ev_sigchld;

static void	parent_bind_listeners(void);
static int	parent_bind(const struct conf_listen *);
static void	parent_bind_control(void);
static void	parent_control_accept(int, short, void *);
static int	parent_control_peer(int);
static int	parent_control_cred(int, const struct ucred *);
static int	parent_control_pidns(int, const struct ucred *);
static struct child *parent_start(enum tregd_proc, int);
static void	parent_connect(struct child *, struct child *);
static void	parent_peer_send(struct child *, struct child *, int);
static void	parent_send_workers(void);
static void	parent_send_conf(struct child *, int);
static void	parent_dispatch(struct imsgev *, struct imsg *);
static void	parent_imsg_log(struct imsgev *, struct imsg *);
static void	parent_imsg_ready(struct imsgev *, struct imsg *);
static void	parent_imsg_ctl_reload(struct imsgev *, struct imsg *);
static void	parent_imsg_verbose(struct imsgev *, struct imsg *);
static void	parent_imsg_keyring(struct imsgev *, struct imsg *);
static void	parent_closed(struct imsgev *);
static void	parent_sig(int, short, void *);
static void	parent_reap(void);
static void	parent_drain(struct child *);
static void	parent_why(int, char *, size_t);
static int	parent_reload(void);
static void	parent_proof_hash(struct tregd_conf *);
static int	parent_send_tls(struct child *, int);
static char	*parent_read_file(const char *, size_t *);
__dead static void parent_shutdown(int);
static void	parent_check_users(void);
static void	parent_ready(struct child *);

__dead void
parent_main(struct tregd_conf *conf, const char *conffile, int debug,
    int verbose)
{
	struct rlimit	 rl;
	ssize_t		 n;
	int		 i;

	parent_conf = *conf;
	explicit_bzero(conf->run_proof, sizeof(conf->run_proof));
	parent_proof_hash(&parent_conf);
	parent_conffile = conffile;
	parent_debug = debug;
	parent_verbose = verbose;
	log_init(debug, verbose);
	notify_init();

	n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);
	if (n == -1)
		fatal("readlink /proc/self/exe");
	self_path[n] = '\0';

	if (geteuid() == 0)
		parent_check_users();
	else
		log_warnx("running as uid %u, not root: no chroot and no uid "
		    "change; the processes and filters are the same",
		    (unsigned)geteuid());

	/* The frontend keeps an idle connection per descriptor. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rlim_t want = parent_conf.http_max_conns + 256;

		if (geteuid() == 0 && rl.rlim_max < want)
			rl.rlim_max = want;
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			log_warn("setrlimit RLIMIT_NOFILE");
	}

	parent_bind_listeners();
	parent_bind_control();

	if (!debug && daemon(1, 0) == -1)
		fatal("daemon");
	log_init(debug, verbose);
	setproctitle("parent");
	signal(SIGPIPE, SIG_IGN);

	event_init();
	nworkers = parent_conf.vault_workers;
	child_frontend = parent_start(PROC_FRONTEND, -1);
	for (i = 0; i < nworkers; i++)
		child_vault[i] = parent_start(PROC_VAULT, i);
	child_exec = parent_start(PROC_EXEC, -1);
	child_relay = parent_start(PROC_RELAY, -1);

	/* A socketpair per pair that talks: each worker has its own. */
	parent_connect(child_frontend, child_exec);
	parent_connect(child_frontend, child_relay);
	/* A proxied run's listeners, made in its sandbox (SPEC 6a). */
	parent_connect(child_exec, child_relay);
	for (i = 0; i < nworkers; i++) {
		parent_connect(child_vault[i], child_frontend);
		parent_connect(child_vault[i], child_exec);
		parent_connect(child_vault[i], child_relay);
	}
	parent_send_workers();
	for (i = 0; i < nchildren; i++)
		parent_send_conf(&children[i], 1);
	parent_send_procinfo();

	event_set(&ev_control, control_fd, EV_READ | EV_PERSIST,
	    parent_control_accept, NULL);
	event_add(&ev_control, NULL);

	signal_set(&ev_sigterm, SIGTERM, parent_sig, NULL);
	signal_set(&ev_sigint, SIGINT, parent_sig, NULL);
	signal_set(&ev_sighup, SIGHUP, parent_sig, NULL);
	signal_set(&ev_sigchld, SIGCHLD, parent_sig, NULL);
	signal_add(&ev_sigterm, NULL);
	signal_add(&ev_sigint, NULL);
	signal_add(&ev_sighup, NULL);
	signal_add(&ev_sigchld, NULL);

	mail_conf_check(&parent_conf);
	if (parent_conf.run_network == RUN_NET_HOST)
		log_warnx("run network host: server runs share this host's "
		    "network (its loopback services too), and keyless runs "
		    "are refused");
	log_info("tregd %s started", TREGD_VERSION);
	event_dispatch();
	parent_shutdown(1);
}

const struct tregd_conf *
parent_config(void)
{
	return (&parent_conf);
}

static void
parent_check_users(void)
{
	const char	*users[] = { TREGD_USER, TREGD_VAULT_USER,
			    TREGD_RELAY_USER };
	struct stat	 st;
	size_t		 i;

	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++)
		if (getpwnam(users[i]) == NULL)
			fatalx("system user %s is missing: create it with "
			    "\"make install\" or useradd --system %s",
			    users[i], users[i]);
	if (stat(TREGD_EMPTY, &st) == -1 || !S_ISDIR(st.st_mode))
		fatalx("%s is missing: create it (mode 0755, owned by root)",
		    TREGD_EMPTY);
}

static void
parent_bind_listeners(void)
{
	int	 i;

	for (i = 0; i < parent_conf.nlisten; i++)
		listen_fds[i] = parent_bind(&parent_conf.listen[i]);
	for (i = 0; i < parent_conf.nmetrics; i++)
		metrics_fds[i] = parent_bind(&parent_conf.metrics[i]);
}

static int
parent_bind(const struct conf_listen *l)
{
	int	 fd, on = 1;

	fd = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		fatal("socket");
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on,
	    sizeof(on)) == -1)
		fatal("setsockopt SO_REUSEADDR");
	if (l->ss.ss_family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6,
	    IPV6_V6ONLY, &on, sizeof(on)) == -1)
		fatal("setsockopt IPV6_V6ONLY");
	if (bind(fd, (struct sockaddr *)&l->ss, l->sslen) == -1)
		fatal("cannot listen on %s port %u", l->name, l->port);
	if (listen(fd, 1024) == -1)
		fatal("listen on %s port %u", l->name, l->port);
	return (fd);
}

static void
parent_bind_control(void)
{
	struct sockaddr_un	 sun;
	struct group		*gr;
	mode_t			 old;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, parent_conf.socket,
	    sizeof(sun.sun_path)) >= sizeof(sun.sun_path))
		fatalx("control socket path too long: %s", parent_conf.socket);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		fatal("socket");
	if (unlink(parent_conf.socket) == -1 && errno != ENOENT)
		fatal("unlink %s", parent_conf.socket);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		fatal("bind %s", parent_conf.socket);
	umask(old);
	if (parent_conf.socket_group[0] != '\0') {
		if ((gr = getgrnam(parent_conf.socket_group)) == NULL)
			fatalx("unknown group %s", parent_conf.socket_group);
		control_gid = gr->gr_gid;
		if (chown(parent_conf.socket, 0, gr->gr_gid) == -1 ||
		    chmod(parent_conf.socket, 0660) == -1)
			fatal("chmod %s", parent_conf.socket);
	}
	if (listen(fd, 16) == -1)
		fatal("listen %s", parent_conf.socket);
	control_fd = fd;
	if (stat("/proc/self/ns/pid", &control_pidns) == -1)
		fatal("stat /proc/self/ns/pid");
}

/*
 * A tregctl connection is checked here, where /proc is (the vault is
 * chrooted and filtered), then served by a vault worker, round robin.
 */
static void
parent_control_accept(int fd, short event, void *arg)
{
	struct child	*c;
	int		 s;

	if ((s = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) ==
	    -1) {
		if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("control accept");
		return;
	}
	if (parent_control_peer(s) == -1) {
		close(s);
		return;
	}
	c = child_vault[control_next++ % nworkers];
	imsgev_compose(&c->iev, IMSG_CTL_CONN, 0, s, NULL, 0);
}

/*
 * Who may use the control socket: a process of the daemon's own pid
 * namespace with the credentials the configuration gives (root, the
 * daemon's user, the socket group), and no uid or gid of "run users".
 * A run is refused whatever its uid: it is a process of a pid namespace
 * of its own, and started by a normal user it has the daemon's uid
 * (user namespace mode).  0, or -1 refused and logged.
 */
static int
parent_control_peer(int s)
{
	struct ucred	 cred;
	socklen_t	 len = sizeof(cred);

	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("control: SO_PEERCRED");
		return (-1);
	}
	if (!parent_control_cred(s, &cred)) {
		log_warnx("control: refused a connection from uid %u gid %u",
		    (unsigned int)cred.uid, (unsigned int)cred.gid);
		return (-1);
	}
	if ((cred.uid >= parent_conf.run_uid_first &&
	    cred.uid <= parent_conf.run_uid_last) ||
	    (cred.gid >= parent_conf.run_uid_first &&
	    cred.gid <= parent_conf.run_uid_last)) {
		log_warnx("control: refused a connection from uid %u gid %u: "
		    "a run's (run users)", (unsigned int)cred.uid,
		    (unsigned int)cred.gid);
		return (-1);
	}
	return (parent_control_pidns(s, &cred));
}

/* Root, the daemon's user, or the socket group, primary or not. */
static int
parent_control_cred(int s, const struct ucred *cred)
{
	gid_t		 groups[1024];
	socklen_t	 len = sizeof(groups);
	size_t		 i;

	if (cred->uid == 0 || cred->uid == getuid())
		return (1);
	if (control_gid == (gid_t)-1)
		return (0);
	if (cred->gid == control_gid)
		return (1);
	/* SO_PEERGROUPS (Linux 4.13): the groups it had when it connected. */
	if (getsockopt(s, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == -1) {
		if (errno == ERANGE)
			log_warnx("control: a peer with more than %zu groups",
			    sizeof(groups) / sizeof(groups[0]));
		return (0);
	}
	for (i = 0; i < len / sizeof(groups[0]); i++)
		if (groups[i] == control_gid)
			return (1);
	return (0);
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD	77	/* Linux 6.5; the kernel's ABI, never changes */
#endif

/*
 * The peer is a process of the daemon's pid namespace.  A process of a
 * namespace the parent does not see into has pid 0 here; one of a
 * namespace below it (a run's) has its pid here and another
 * /proc/PID/ns/pid.  A pidfd of the peer (SO_PEERPIDFD, else one opened
 * on its pid at once) still naming a live process after the look says
 * the pid was not reused meanwhile.
 */
static int
parent_control_pidns(int s, const struct ucred *cred)
{
	struct stat	 st;
	char		 path[64];
	socklen_t	 len = sizeof(int);
	int		 pidfd = -1, ok = 0;

	if (cred->pid <= 0) {
		log_warnx("control: refused a connection from pid namespace "
		    "unknown (uid %u): not the daemon's",
		    (unsigned int)cred->uid);
		return (-1);
	}
	if (getsockopt(s, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == -1 &&
	    (errno != ENOPROTOOPT ||
	    (pidfd = (int)syscall(SYS_pidfd_open, cred->pid, 0)) == -1)) {
		log_warn("control: no pidfd of pid %d", (int)cred->pid);
		return (-1);
	}
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)cred->pid);
	if (stat(path, &st) == -1)
		memset(&st, 0, sizeof(st));
	ok = st.st_dev == control_pidns.st_dev &&
	    st.st_ino == control_pidns.st_ino &&
	    syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) == 0;
	if (!ok)
		log_warnx("control: refused a connection from pid namespace "
		    "%llu (pid %d, uid %u): not the daemon's",
		    (unsigned long long)st.st_ino, (int)cred->pid,
		    (unsigned int)cred->uid);
	close(pidfd);
	return (ok ? 0 : -1);
}

/* fork, put the channel on fd 3, re-exec ourselves as the child. */
static struct child *
parent_start(enum tregd_proc id, int worker)
{
	struct child	*c = &children[nchildren++];
	char		*argv[8];
	int		 sp[2], argc = 0;
	pid_t		 pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("socketpair");
	switch ((pid = fork())) {
	case -1:
		fatal("fork");
	case 0:
		if (dup2(sp[1], PROC_PARENT_FD) == -1)
			fatal("dup2");
		closefrom(PROC_PARENT_FD + 1);
		argv[argc++] = "tregd";
		argv[argc++] = "-P";
		argv[argc++] = (char *)proc_names[id];
		if (parent_debug)
			argv[argc++] = "-d";
		if (parent_verbose)
			argv[argc++] = parent_verbose > 1 ? "-vv" : "-v";
		argv[argc] = NULL;
		execv(self_path, argv);
		fatal("execv %s", self_path);
	}
	close(sp[1]);
	c->id = id;
	c->worker = worker;
	c->name = worker == -1 ? proc_names[id] : proc_worker_name(worker);
	c->pid = pid;
	c->started = time(NULL);
	c->exited = 0;
	imsgev_init(&c->iev, sp[0], id, c->name, parent_dispatch,
	    parent_closed, c);
	return (c);
}

/* A channel between two children: a socketpair, one end to each. */
static void
parent_connect(struct child *a, struct child *b)
{
	int	 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1)
		fatal("socketpair");
	parent_peer_send(a, b, sp[0]);
	parent_peer_send(b, a, sp[1]);
}

/* to gets fd, its end of the channel to peer: a worker's says which. */
static void
parent_peer_send(struct child *to, struct child *peer, int fd)
{
	uint32_t	 v;

	if (peer->worker != -1) {
		v = peer->worker;
		imsgev_compose(&to->iev, IMSG_CONF_VAULT, 0, fd, &v,
		    sizeof(v));
	} else {
		v = peer->id;
		imsgev_compose(&to->iev, IMSG_CONF_PEER, 0, fd, &v,
		    sizeof(v));
	}
}

/*
 * Each worker learns its number and gets the table of run slots they
 * share (run slots count for the host, not per worker: vault_slots.c).
 */
static void
parent_send_workers(void)
{
	struct conf_worker	 cw;
	int			 i, fd;

	if ((slots_fd = memfd_create("tregd-run-slots", MFD_CLOEXEC)) ==
	    -1)
		fatal("memfd_create");
	if (ftruncate(slots_fd, RUN_SLOTS_TABLE_SIZE) == -1)
		fatal("ftruncate run slots table");
	for (i = 0; i < nworkers; i++) {
		cw.index = i;
		cw.count = nworkers;
		if ((fd = dup(slots_fd)) == -1)
			fatal("dup");
		imsgev_compose(&child_vault[i]->iev, IMSG_CONF_WORKER, 0, fd,
		    &cw, sizeof(cw));
	}
}

/* The run proof becomes its hash: only the frontend gets even that. */
static void
parent_proof_hash(struct tregd_conf *c)
{
	c->run_proof_set = c->run_proof[0] != '\0';
	if (c->run_proof_set)
		crypto_generichash(c->run_proof_hash,
		    sizeof(c->run_proof_hash), (unsigned char *)c->run_proof,
		    strlen(c->run_proof), NULL, 0);
	explicit_bzero(c->run_proof, sizeof(c->run_proof));
}

static char *
parent_read_file(const char *path, size_t *len)
{
	struct stat	 st;
	char		*buf;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		log_warn("%s", path);
		return (NULL);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size <= 0 || st.st_size > TLS_FILE_MAX) {
		log_warnx("%s: not a regular file of at most %d bytes", path,
		    TLS_FILE_MAX);
		close(fd);
		return (NULL);
	}
	if ((buf = malloc(st.st_size)) == NULL)
		fatal("%s: malloc", __func__);
	n = read(fd, buf, st.st_size);
	close(fd);
	if (n != st.st_size) {
		log_warnx("%s: short read", path);
		freezero(buf, st.st_size);
		return (NULL);
	}
	*len = n;
	return (buf);
}

/* The TLS certificate and key, read again at every start and reload. */
static int
parent_send_tls(struct child *c, int first)
{
	char	*cert, *key;
	size_t	 clen, klen;
	int	 i, r;

	for (i = 0; i < parent_conf.nlisten; i++)
		if (parent_conf.listen[i].tls)
			break;
	if (i == parent_conf.nlisten)
		return (0);
	if ((cert = parent_read_file(parent_conf.tls_cert, &clen)) == NULL)
		goto fail;
	if ((key = parent_read_file(parent_conf.tls_key, &klen)) == NULL) {
		freezero(cert, clen);
		goto fail;
	}
	r = imsgev_send_blob(&c->iev, IMSG_CONF_TLS_CERT, 1, NULL, 0, cert,
	    clen);
	r |= imsgev_send_blob(&c->iev, IMSG_CONF_TLS_KEY, 2, NULL, 0, key,
	    klen);
	freezero(cert, clen);
	freezero(key, klen);
	if (r == -1)
		fatal("%s: send", __func__);
	return (0);
 fail:
	if (first)
		fatalx("tls: cannot read the certificate or key");
	log_warnx("reload: tls certificate or key not read: keeping the "
	    "running ones");
	return (-1);
}

static void
parent_send_conf(struct child *c, int first)
{
	struct tregd_conf	 cc;
	uint32_t		 i;
	int			 fd;

	cc = parent_conf;
	/* Only the frontend checks the proof; the others may know it is set. */
	if (c->id != PROC_FRONTEND)
		explicit_bzero(cc.run_proof_hash, sizeof(cc.run_proof_hash));
	imsgev_compose(&c->iev, IMSG_CONF, 0, -1, &cc, sizeof(cc));
	explicit_bzero(&cc, sizeof(cc));
	if (c->id == PROC_FRONTEND)
		parent_send_tls(c, first);
	if (first && c->id == PROC_FRONTEND)
		for (i = 0; i < (uint32_t)parent_conf.nlisten; i++) {
			if ((fd = dup(listen_fds[i])) == -1)
				fatal("dup");
			imsgev_compose(&c->iev, IMSG_CONF_LISTEN, 0, fd,
			    &i, sizeof(i));
		}
	if (first && c->id == PROC_FRONTEND)
		for (i = 0; i < (uint32_t)parent_conf.nmetrics; i++) {
			if ((fd = dup(metrics_fds[i])) == -1)
				fatal("dup");
			imsgev_compose(&c->iev, IMSG_CONF_METRICS, 0, fd,
			    &i, sizeof(i));
		}
	imsgev_compose(&c->iev, IMSG_CONF_END, 0, -1, NULL, 0);
}

/* The process table of tregctl show status: parent, then each child. */
void
parent_send_procinfo(void)
{
	struct procinfo	 pi[PROCINFO_MAX];
	int		 i;

	memset(pi, 0, sizeof(pi));
	pi[0].pid = getpid();
	pi[0].started = child_vault[0]->started;
	strlcpy(pi[0].name, proc_names[PROC_PARENT], sizeof(pi[0].name));
	for (i = 0; i < nchildren; i++) {
		pi[i + 1].pid = children[i].pid;
		pi[i + 1].started = children[i].started;
		strlcpy(pi[i + 1].name, children[i].name,
		    sizeof(pi[i + 1].name));
	}
	for (i = 0; i < nworkers; i++)
		imsgev_compose(&child_vault[i]->iev, IMSG_PROCINFO, 0, -1,
		    pi, sizeof(pi));
}

#define FROM_CHILD	(IMSG_FROM(PROC_FRONTEND) | IMSG_FROM(PROC_VAULT) | \
			    IMSG_FROM(PROC_EXEC) | IMSG_FROM(PROC_RELAY))
#define FROM_VAULT	IMSG_FROM(PROC_VAULT)

/* Every message the parent takes, and from which children. */
static const struct imsg_handler parent_imsgs[] = {
	{ IMSG_LOG,		FROM_CHILD, IMSG_LEN_ANY,	parent_imsg_log },
	{ IMSG_READY,		FROM_CHILD, 0,			parent_imsg_ready },
	/* tregctl's commands that reach past the vault. */
	{ IMSG_CTL_RELOAD,	FROM_VAULT, 0,		parent_imsg_ctl_reload },
	{ IMSG_CTL_LOG_VERBOSE,	FROM_VAULT, sizeof(int),	parent_imsg_verbose },
	{ IMSG_KEYRING,		FROM_VAULT, 0,		parent_imsg_keyring },
	{ IMSG_MAIL_SEND,	FROM_VAULT, sizeof(struct mail_send),
	    parent_imsg_mail },
};

static void
parent_dispatch(struct imsgev *iev, struct imsg *imsg)
{
	imsgev_dispatch(IMSG_HANDLERS(parent_imsgs), iev, imsg);
}

static void
parent_imsg_log(struct imsgev *iev, struct imsg *imsg)
{
	const char	*line;
	int		 pri;

	if (imsg->datalen < sizeof(pri) + 1)
		fatalx("bad IMSG_LOG from %s", iev->name);
	memcpy(&pri, imsg->data, sizeof(pri));
	line = (char *)imsg->data + sizeof(pri);
	if (line[imsg->datalen - sizeof(pri) - 1] != '\0')
		fatalx("bad IMSG_LOG from %s", iev->name);
	log_emit(pri, line);
}

static void
parent_imsg_ready(struct imsgev *iev, struct imsg *imsg)
{
	struct child	*c = iev->arg;

	if (c->ready)
		fatalx("bad IMSG_READY from %s", iev->name);
	parent_ready(c);
}

static void
parent_imsg_ctl_reload(struct imsgev *iev, struct imsg *imsg)
{
	struct ctl_reload_done	 rd;

	memset(&rd, 0, sizeof(rd));
	rd.result = parent_reload();
	if (rd.result == -1)
		strlcpy(rd.error, parse_error, sizeof(rd.error));
	imsgev_compose(iev, IMSG_CTL_RELOAD_DONE, imsg->hdr.id, -1, &rd,
	    sizeof(rd));
}

static void
parent_imsg_verbose(struct imsgev *iev, struct imsg *imsg)
{
	int	 v, r;

	memcpy(&v, imsg->data, sizeof(v));
	log_setverbose(v);
	for (r = 0; r < nchildren; r++)
		imsgev_compose(&children[r].iev, IMSG_LOG_VERBOSE, 0, -1, &v,
		    sizeof(v));
	log_info("log %s", v ? "verbose" : "brief");
}

/* The others load the key the sender now seals with. */
static void
parent_imsg_keyring(struct imsgev *iev, struct imsg *imsg)
{
	struct child	*c = iev->arg;
	int		 r;

	for (r = 0; r < nworkers; r++)
		if (child_vault[r] != c)
			imsgev_compose(&child_vault[r]->iev,
			    IMSG_KEYRING_RELOAD, 0, -1, NULL, 0);
}

static void
parent_closed(struct imsgev *iev)
{
	/* The exit status arrives with SIGCHLD; reap there. */
	parent_reap();
}

static void
parent_sig(int sig, short event, void *arg)
{
	switch (sig) {
	case SIGTERM:
	case SIGINT:
		parent_shutdown(0);
	case SIGHUP:
		log_info("SIGHUP: reloading %s", parent_conffile);
		parent_reload();
		break;
	case SIGCHLD:
		parent_reap();
		break;
	}
}

/*
 * Ready once every core child serves: then the frontend starts accepting
 * (until then connections wait in the backlog) and the service manager
 * hears.
 */
static void
parent_ready(struct child *c)
{
	int	 i;

	c->ready = 1;
	for (i = 0; i < nchildren; i++)
		if (!children[i].ready)
			return;
	if (imsgev_compose(&child_frontend->iev, IMSG_SERVE, 0, -1, NULL,
	    0) == -1)
		fatal("%s: imsgev_compose", __func__);
	notify_send("READY=1");
}

/* A dead child's last log lines (its fatal() reason) are still queued. */
static void
parent_drain(struct child *c)
{
	ssize_t	 n;

	if (c->iev.dead)
		return;
	do {
		n = imsgbuf_read(&c->iev.ibuf);
		imsgev_drain(&c->iev);
	} while (n > 0 && !c->iev.dead);
}

static void
parent_reap(void)
{
	struct child	*c;
	char		 why[64];
	pid_t		 pid;
	int		 status, i;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (i = 0, c = NULL; i < nchildren; i++)
			if (children[i].pid == pid)
				c = &children[i];
		if (c == NULL) {
			mail_reaped(pid, status);
			continue;
		}
		c->exited = 1;
		if (shutting_down)
			continue;
		parent_drain(c);
		parent_why(status, why, sizeof(why));
		log_warnx("%s process (pid %d) %s: stopping tregd", c->name,
		    (int)pid, why);
		parent_shutdown(1);
	}
}

static void
parent_why(int status, char *why, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(why, len, "killed by signal %d (%s)",
		    WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(why, len, "exited with status %d",
		    WEXITSTATUS(status));
}

/* Re-read the file; a bad one is refused and the running one stays. */
static int
parent_reload(void)
{
	struct tregd_conf	 nconf;
	int			 i;

	notify_send("RELOADING=1");
	conf_defaults(&nconf);
	parse_errors_to_log = 1;
	parse_error[0] = '\0';
	if (parse_config(parent_conffile, &nconf) == -1) {
		log_warnx("reload: %s has errors, keeping the running "
		    "configuration", parent_conffile);
		explicit_bzero(&nconf, sizeof(nconf));
		notify_send("READY=1");
		return (-1);
	}
	/* What was bound or opened at start cannot change without restart. */
	if (memcmp(nconf.listen, parent_conf.listen, sizeof(nconf.listen)) ||
	    nconf.nlisten != parent_conf.nlisten ||
	    strcmp(nconf.state, parent_conf.state) ||
	    strcmp(nconf.socket, parent_conf.socket) ||
	    strcmp(nconf.run_dir, parent_conf.run_dir) ||
	    nconf.vault_workers != parent_conf.vault_workers)
		log_warnx("reload: listen, state, socket, run directory and "
		    "vault workers changes take effect at the next start");
	nconf.vault_workers = parent_conf.vault_workers;
	memcpy(nconf.listen, parent_conf.listen, sizeof(nconf.listen));
	nconf.nlisten = parent_conf.nlisten;
	memcpy(nconf.state, parent_conf.state, sizeof(nconf.state));
	memcpy(nconf.socket, parent_conf.socket, sizeof(nconf.socket));
	memcpy(nconf.run_dir, parent_conf.run_dir, sizeof(nconf.run_dir));
	parent_proof_hash(&nconf);
	parent_conf = nconf;
	explicit_bzero(&nconf, sizeof(nconf));
	mail_conf_check(&parent_conf);
	for (i = 0; i < nchildren; i++)
		parent_send_conf(&children[i], 0);
	log_info("configuration reloaded");
	notify_send("READY=1");
	return (0);
}

/* Stop every child: SIGTERM, a grace period, then SIGKILL. */
__dead static void
parent_shutdown(int code)
{
	struct timespec	 ts = { 0, 50 * 1000 * 1000 };
	char		 why[64];
	pid_t		 pid;
	int		 i, status, tries, alive;

	shutting_down = 1;
	notify_send("STOPPING=1");
	for (i = 0; i < nchildren; i++)
		if (children[i].pid > 0 && !children[i].exited)
			kill(children[i].pid, SIGTERM);
	for (tries = 0; tries < 100; tries++) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
			for (i = 0; i < nchildren; i++) {
				if (children[i].pid != pid)
					continue;
				children[i].exited = 1;
				/*
				 * A peer that lost its channel may be reaped
				 * before the child whose death caused it: name
				 * every death our SIGTERM did not cause.  On a
				 * requested stop, a peer exiting on another's
				 * closed channel is expected and says so.
				 */
				if (code == 0 || (WIFSIGNALED(status) &&
				    WTERMSIG(status) == SIGTERM) ||
				    (WIFEXITED(status) &&
				    WEXITSTATUS(status) == 0))
					continue;
				parent_drain(&children[i]);
				parent_why(status, why, sizeof(why));
				log_warnx("%s process (pid %d) %s",
				    children[i].name, (int)pid, why);
			}
		for (i = 0, alive = 0; i < nchildren; i++)
			if (children[i].pid > 0 && !children[i].exited)
				alive++;
		if (alive == 0)
			break;
		nanosleep(&ts, NULL);
	}
	for (i = 0; i < nchildren; i++)
		if (children[i].pid > 0 && !children[i].exited) {
			log_warnx("%s did not stop, killing it",
			    children[i].name);
			kill(children[i].pid, SIGKILL);
			waitpid(children[i].pid, &status, 0);
		}
	unlink(parent_conf.socket);
	log_info("tregd stopped");
	exit(code);
}
