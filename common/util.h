/*
 * Small helpers shared by the processes.
 */

#ifndef UTIL_H
#define UTIL_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_LEN	43	/* base64url of 32 random bytes */

/* Make jansson zero every block it frees: bodies carry secret values. */
void	json_zero_alloc(void);
void	event_zero_alloc(void);
/* BLAKE2b-256 of a token: the only form of it stored or sent on. */
void	token_hash(const char *, size_t, uint8_t [32]);
/* A new token (NUL-terminated, TOKEN_LEN chars) and its hash. */
void	token_new(char [TOKEN_LEN + 1], uint8_t [32]);
int	token_wellformed(const char *, size_t);
/* CLOCK_MONOTONIC in ns: the stage stamps of a run. */
int64_t	mono_ns(void);
size_t	pct_encode(char *, const char *, size_t);

#endif /* UTIL_H */
