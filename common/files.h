/*
 * Files for the command-line modes (tregctl backup, tregd -R): each
 * failure ends the program with err(3), naming the path.
 */

#ifndef FILES_H
#define FILES_H

#include <sys/types.h>

/* buf (PATH_MAX bytes) = dir/name. */
void	files_path(char *, const char *, const char *);
/* from to a new file to (0600), owned by uid:gid unless uid is -1. */
void	files_copy(const char *, const char *, uid_t, gid_t);

#endif /* FILES_H */
