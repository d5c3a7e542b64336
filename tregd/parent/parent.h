/*
 * parent/: what the parent's files share (the parent process, root: the
 * configuration, the sockets, the children and their supervision).
 */

#ifndef PARENT_H
#define PARENT_H

#include "tregd.h"

/* parent.c */
void	 parent_send_procinfo(void);

/* notify.c */
void	 notify_init(void);
void	 notify_send(const char *);

#endif /* PARENT_H */
