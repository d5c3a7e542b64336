/*
 * tregd: entry point.  The same binary is the parent (no -P), each child
 * (re-executed by the parent with -P name and its channel on fd 3), the
 * configuration checker (-n) and the sandbox self test (-T name).
 */

#include <sys/types.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <event.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"
#include "sandbox.h"
#include "tregd.h"

__dead static void	usage(void);

__dead static void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dnv] [-D macro=value] [-f file] "
	    "[-R backup]\n", __progname);
	exit(1);
}

int
main(int argc, char *argv[], char *envp[])
{
	struct tregd_conf	 conf;
	const char		*conffile = TREGD_CONF, *title = NULL;
	const char		*selftest = NULL, *restore = NULL;
	int			 ch, debug = 0, noaction = 0, verbose = 0;

	setproctitle_init(argc, argv, envp);
	log_init(1, 0);		/* stderr until we know better */
	while ((ch = getopt(argc, argv, "D:df:nP:R:T:v")) != -1) {
		switch (ch) {
		case 'D':
			if (cmdline_symset(optarg) < 0)
				errx(1, "could not parse macro definition %s",
				    optarg);
			break;
		case 'd':
			debug = 1;
			break;
		case 'f':
			conffile = optarg;
			break;
		case 'n':
			noaction = 1;
			break;
		case 'P':
			title = optarg;
			break;
		case 'R':
			restore = optarg;
			break;
		case 'T':
			selftest = optarg;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	if (argc != 0)
		usage();

	if (selftest != NULL && strcmp(selftest, "routes") == 0) {
		front_print_routes(stdout);
		return (0);
	}
	if (selftest != NULL) {
		/* "child": the filter, then a real sandboxed run. */
		if (strcmp(selftest, "child") == 0)
			return (sbx_selftest());
		if (strcmp(selftest, "relay") == 0)
			return (relay_selftest());
		if ((ch = sandbox_selftest(selftest)) == -1)
			errx(1, "unknown selftest %s", selftest);
		return (ch);
	}
	if (title != NULL) {
		if (strcmp(title, "frontend") == 0)
			frontend_main(debug, verbose);
		else if (strcmp(title, "vault") == 0)
			vault_main(debug, verbose);
		else if (strcmp(title, "exec") == 0)
			exec_main(debug, verbose);
		else if (strcmp(title, "relay") == 0)
			relay_main(debug, verbose);
		errx(1, "unknown process %s", title);
	}

	conf_defaults(&conf);
	if (parse_config(conffile, &conf) == -1)
		return (1);
	if (restore != NULL && !noaction)
		restore_main(&conf, restore);
	if (noaction) {
		if (verbose)
			print_config(&conf, stdout);
		else
			fprintf(stderr, "configuration OK\n");
		return (0);
	}
	parent_main(&conf, conffile, debug, verbose);
	/* NOTREACHED */
	return (0);
}

