/*
 * exec_rset.c: exec's compiled redaction sets, one per tool and version
 * of its secrets.
 */

#ifndef EXEC_RSET_H
#define EXEC_RSET_H

#include <sodium.h>

struct redact_set;
struct rset;

/* The keyed digest of a run's secrets: which version of them it has. */
struct rset_digest {
	crypto_generichash_state st;
	unsigned char		 digest[crypto_generichash_BYTES];
};

void	 rset_init(void);
void	 rset_digest_init(struct rset_digest *);
void	 rset_digest_add(struct rset_digest *, const void *, size_t);
void	 rset_digest_final(struct rset_digest *);
struct rset *rset_get(int64_t, const struct rset_digest *);
struct rset *rset_add(int64_t, const struct rset_digest *,
	    struct redact_set *);
void	 rset_put(struct rset *);
void	 rset_clear(void);
const struct redact_set *rset_set(const struct rset *);
size_t	 rset_count(void);

#endif /* EXEC_RSET_H */
