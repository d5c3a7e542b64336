/*
 * mail.c: a sign-in code (vault_mail.c) handed to the host's sendmail,
 * as OpenBSD daemons mail: they speak no SMTP themselves.
 *
 * Why the parent runs it: the vault starts no program (its filter has
 * no exec, and it holds the master key); the frontend and the relay
 * hold client and upstream bytes; exec's filter forbids sockets, which
 * a sendmail needs (postdrop's socket, msmtp's SMTP), and exec forks
 * runs only.  The parent already starts processes, and takes from its
 * children only checked messages of a fixed size.
 *
 * The program runs as the frontend's user, never as root, with the
 * message on its stdin, /dev/null for its stdout and stderr, no other
 * descriptor, an environment of PATH alone, and no shell:
 * execve(path, { path, "-i", "--", to }).  At most MAIL_CHILDREN_MAX run
 * at once, each killed after MAIL_TIMEOUT seconds.  The code reaches no
 * log line; it is zeroed once written to the pipe.
 */

#include <sys/types.h>
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proc.h"
#include "parent.h"
#include "conf.h"

#define MAIL_CHILDREN_MAX	8
#define MAIL_TIMEOUT		60	/* seconds */

struct mail_child {
	pid_t		 pid;
	struct event	 ev;
};

static struct mail_child	 mail_children[MAIL_CHILDREN_MAX];

static int	mail_valid(const struct mail_send *);
static int	mail_compose(const struct tregd_conf *, const struct mail_send *,
		    char *, size_t);
static pid_t	mail_spawn(const char *, const char *, int);
static void	mail_timeout(int, short, void *);

/* Said at start and at each reload: development mode signs anyone in. */
void
mail_conf_check(const struct tregd_conf *conf)
{
	if (conf->mail_development)
		log_warnx("mail development: sign-in codes are returned in "
		    "the answer, not mailed: anyone can sign in as any "
		    "address; never on a host that others can reach");
}

static int
mail_valid(const struct mail_send *m)
{
	size_t	 i, n;

	if (memchr(m->to, '\0', sizeof(m->to)) == NULL ||
	    memchr(m->code, '\0', sizeof(m->code)) == NULL ||
	    !conf_mail_address(m->to))
		return (0);
	n = strlen(m->code);
	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)m->code[i]))
			return (0);
	return (n > 0 && m->ttl_minutes > 0 && m->ttl_minutes < 1440);
}

static int
mail_compose(const struct tregd_conf *conf, const struct mail_send *m,
    char *buf, size_t len)
{
	char	 from[CONF_MAIL_FROM_LEN + 8] = "";
	int	 n;

	if (conf->mail_from[0] != '\0')
		snprintf(from, sizeof(from), "From: %s\n", conf->mail_from);
	n = snprintf(buf, len, "%sTo: %s\n"
	    "Subject: Your tregd sign-in code\n"
	    "Auto-Submitted: auto-generated\n"
	    "MIME-Version: 1.0\n"
	    "Content-Type: text/plain; charset=us-ascii\n"
	    "\n"
	    "Your sign-in code is %s.\n"
	    "It works once, for %u minutes.\n"
	    "\n"
	    "If you did not ask to sign in, ignore this mail.\n",
	    from, m->to, m->code, m->ttl_minutes);
	return (n > 0 && (size_t)n < len ? n : -1);
}

/* The sendmail child, its stdin the pipe's end fd: its pid, or -1. */
static pid_t
mail_spawn(const char *path, const char *to, int fd)
{
	char *const	 envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
			    NULL };
	struct passwd	*pw = NULL;
	sigset_t	 none;
	pid_t		 pid;
	int		 null;

	if (getuid() == 0 && (pw = getpwnam(TREGD_USER)) == NULL) {
		log_warnx("mail: no user %s to run sendmail as", TREGD_USER);
		return (-1);
	}
	if ((pid = fork()) != 0)
		return (pid);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if ((null = open("/dev/null", O_RDWR)) == -1 ||
	    dup2(fd, STDIN_FILENO) == -1 ||
	    dup2(null, STDOUT_FILENO) == -1 ||
	    dup2(null, STDERR_FILENO) == -1)
		_exit(127);
	closefrom(STDERR_FILENO + 1);
	if (pw != NULL && (setgroups(1, &pw->pw_gid) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1))
		_exit(127);
	execve(path, (char *const []){ (char *)path, "-i", "--",
	    (char *)to, NULL }, envp);
	_exit(127);
}

static void
mail_timeout(int fd, short ev, void *arg)
{
	struct mail_child	*c = arg;

	if (c->pid > 0) {
		log_warnx("mail: sendmail (pid %d) took over %d seconds: "
		    "killed", (int)c->pid, MAIL_TIMEOUT);
		kill(c->pid, SIGKILL);
	}
}

void
parent_imsg_mail(struct imsgev *iev, struct imsg *imsg)
{
	const struct tregd_conf	*conf = parent_config();
	struct mail_send	 m;
	struct mail_child	*c = NULL;
	struct timeval		 tv = { MAIL_TIMEOUT, 0 };
	char			 msg[2048];
	int			 p[2], n, i;

	memcpy(&m, imsg->data, sizeof(m));
	for (i = 0; i < MAIL_CHILDREN_MAX && c == NULL; i++)
		if (mail_children[i].pid == 0)
			c = &mail_children[i];
	if (!mail_valid(&m))
		fatalx("bad IMSG_MAIL_SEND from %s", iev->name);
	if (conf->mail_sendmail[0] == '\0' || c == NULL ||
	    (n = mail_compose(conf, &m, msg, sizeof(msg))) == -1) {
		log_warnx("mail: a sign-in code was not sent (%s)",
		    c == NULL ? "too many mails at once" :
		    "no mail sendmail configured");
		explicit_bzero(&m, sizeof(m));
		return;
	}
	if (pipe2(p, O_CLOEXEC) == -1) {
		log_warn("mail: pipe");
		explicit_bzero(&m, sizeof(m));
		explicit_bzero(msg, sizeof(msg));
		return;
	}
	c->pid = mail_spawn(conf->mail_sendmail, m.to, p[0]);
	close(p[0]);
	explicit_bzero(&m, sizeof(m));
	/* Under PIPE_BUF into an empty pipe: written whole, never blocks. */
	if (c->pid > 0 && write(p[1], msg, n) != n)
		log_warn("mail: write to sendmail");
	close(p[1]);
	explicit_bzero(msg, sizeof(msg));
	if (c->pid == -1) {
		log_warn("mail: fork");
		c->pid = 0;
		return;
	}
	evtimer_set(&c->ev, mail_timeout, c);
	evtimer_add(&c->ev, &tv);
	log_info("mail: a sign-in code handed to %s (pid %d)",
	    conf->mail_sendmail, (int)c->pid);
}

/* A child that was not a process of tregd's: 1 if it was sendmail. */
int
mail_reaped(pid_t pid, int status)
{
	int	 i;

	for (i = 0; i < MAIL_CHILDREN_MAX; i++) {
		if (mail_children[i].pid != pid)
			continue;
		evtimer_del(&mail_children[i].ev);
		mail_children[i].pid = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			log_warnx("mail: sendmail (pid %d) failed: %s %d",
			    (int)pid, WIFEXITED(status) ? "status" : "signal",
			    WIFEXITED(status) ? WEXITSTATUS(status) :
			    WTERMSIG(status));
		return (1);
	}
	return (0);
}
