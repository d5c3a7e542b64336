/*
 * The naive redactor the streaming one is compared with (unit tests and
 * the differential fuzzer): the semantics of redact.h, written the
 * obvious way over the whole stream at once.
 */

#ifndef REDACT_REF_H
#define REDACT_REF_H

#include <stddef.h>
#include <stdint.h>

/*
 * Mask in[0, n) with the patterns pat[i] (plen[i] bytes, as
 * redact_set_foreach() gives them: without whitespace).  *out is
 * malloc'd (*outlen bytes, no cap applied).  Returns the count of
 * matches not contained in another.
 */
size_t	 redact_ref(uint8_t *const *, const size_t *, size_t,
	    const uint8_t *, size_t, uint8_t **, size_t *);

#endif /* REDACT_REF_H */
