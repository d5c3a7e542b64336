/*
 * sandbox_child: the run child's filter, installed.  Apart from
 * sandbox.c (which builds it with libseccomp) because exec's zygote, a
 * small static program (tregd/zygote/), installs it in every init.
 */

#include <sys/prctl.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <stdlib.h>

#include "sandbox.h"

int
sandbox_child_apply(const struct sandbox_child *sc)
{
	struct sock_fprog	 prog;

	if (sc->bpf == NULL || sc->len == 0) {
		errno = EINVAL;
		return (-1);
	}
	prog.len = sc->len;
	prog.filter = sc->bpf;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return (-1);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == -1)
		return (-1);
	return (0);
}

void
sandbox_child_free(struct sandbox_child *sc)
{
	free(sc->bpf);
	sc->bpf = NULL;
	sc->len = 0;
}
