/*
 * The unit tests' PostgreSQL side: a fresh database of their own on the
 * test server that make check-pg passes as the kyua variable pg_host.
 */

#ifndef PGDB_H
#define PGDB_H

#include <stddef.h>

#include <atf-c.h>

/*
 * Create the database prefix_<pid>_<time> on the server of pg_host and
 * write its conninfo (user tregd) to ci; the case fails if it cannot.
 */
void	 pgdb_create(const atf_tc_t *, const char *, char *, size_t);

/*
 * Open the store on this pass's engine (kyua's "engine"): a fresh
 * PostgreSQL database named by prefix (pgdb_create), or an empty sqlite
 * database in memory.  Returns 1 on PostgreSQL, 0 on sqlite; the case
 * fails if the store cannot be opened.
 */
int	 pgdb_store_open(const atf_tc_t *, const char *);

#endif /* PGDB_H */
