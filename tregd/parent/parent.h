/*
 * parent/: what the parent's files share (the parent process, root: the
 * configuration, the sockets, the children and their supervision).
 */

#ifndef PARENT_H
#define PARENT_H

#include "proc.h"
#include "tregd.h"

/* parent.c */
void	 parent_send_procinfo(void);
const struct tregd_conf *parent_config(void);

/* mail.c */
void	 mail_conf_check(const struct tregd_conf *);
void	 parent_imsg_mail(struct imsgev *, struct imsg *);
int	 mail_reaped(pid_t, int);

/* notify.c */
void	 notify_init(void);
void	 notify_send(const char *);

#endif /* PARENT_H */
