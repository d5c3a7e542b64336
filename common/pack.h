/*
 * pack: a flat, checked encoding for the variable part of an imsg
 * (argv, environment, secrets).  A string is a uint32_t length, the bytes
 * and a NUL; the reader checks every length against what is left, so a
 * short or lying message is detected, never over-read.
 */

#ifndef PACK_H
#define PACK_H

#include <stddef.h>
#include <stdint.h>

struct pack {
	char	*buf;
	size_t	 len;
	size_t	 cap;
};

struct unpack {
	const char	*p;
	size_t		 left;
	int		 bad;		/* sticky: any read past the end */
};

void		 pack_init(struct pack *);
void		 pack_u32(struct pack *, uint32_t);
void		 pack_bytes(struct pack *, const void *, size_t);
void		 pack_str(struct pack *, const char *);
void		 pack_free(struct pack *);	/* zeroes: may hold secrets */

void		 unpack_init(struct unpack *, const void *, size_t);
uint32_t	 unpack_u32(struct unpack *);
/* Returns the string (NUL-terminated, in the buffer) and its length. */
const char	*unpack_bytes(struct unpack *, size_t *);
const char	*unpack_str(struct unpack *);	/* no NUL inside */
int		 unpack_done(struct unpack *);	/* 0: all consumed, no error */

#endif /* PACK_H */
