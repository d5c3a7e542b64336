/*
 * The streaming redactor: masks every occurrence of every form of every
 * secret of a run before a byte of the run's output leaves the exec
 * process.  No dependency on the rest of the daemon (libc and libbsd only),
 * so it is unit-tested and fuzzed alone.
 *
 * A redact_set holds the compiled patterns of one run and is immutable
 * after redact_set_compile(), so any number of streams (stdout, stderr)
 * share it.  A redact is one output stream.
 *
 * Semantics, identical to a naive scan over the whole stream at once
 * whatever the write boundaries are (regress/lib/redact_ref.c is that
 * scan):
 *  - whitespace (space, tab, '\r', '\n', '\v', '\f') is transparent: a
 *    pattern is stored without it and matches the stream with up to
 *    REDACT_MAXWS whitespace bytes between any two of its bytes, so hex
 *    and base64 match in any layout (wrapped at any width, a space or
 *    tab between units or groups, leading or not, wrapped irregularly);
 *    a match spans from its first byte to its last;
 *  - every byte inside a match of any pattern is masked, and each maximal
 *    run of masked bytes (matches that overlap or touch) becomes one
 *    "***", so no byte of a secret's match survives;
 *  - redact_count() counts matches not contained in another match (two
 *    overlapping secrets count two, a secret and its own line one);
 *  - bytes that cannot yet be decided (at most (REDACT_MAXWS + 1) *
 *    maxlen of them) are held back until more input or redact_finish();
 *  - the cap applies to the redacted output: the bytes handed to out() are
 *    exactly the first `cap' bytes of the whole redacted stream.  Input past
 *    the cap is still scanned, so redact_count() counts every occurrence in
 *    the stream, including those in the dropped part.
 */

#ifndef REDACT_H
#define REDACT_H

#include <stddef.h>

#define REDACT_MASK	"***"
#define REDACT_MINFORMS	8	/* shorter secrets are masked raw only */
#define REDACT_MAXWS	8	/* whitespace bytes in a row a match steps */

struct redact_set;
struct redact;
typedef void (*redact_out_fn)(void *arg, const void *buf, size_t len);
typedef void (*redact_pattern_fn)(void *arg, const void *pat, size_t len);

struct redact_set *redact_set_new(void);
/*
 * Add a secret: the raw bytes always; for len >= REDACT_MINFORMS also
 * base64 (standard and URL-safe, three alignments, with and without the
 * trailing partial character and padding), percent-encoding (every byte,
 * upper and lower case hex; URL-encoding keeping unreserved characters,
 * upper and lower; form-encoding with '+' for space), JSON string escaping
 * (with and without "\/", \u00XX upper and lower, and with non-ASCII
 * characters as \uXXXX as Python writes them), hex (upper and lower, plain
 * and with ':' between bytes) and, for a multi-line value, every line of
 * 8+ bytes that are not whitespace.  Whitespace inside any of them is
 * transparent (above).  Empty secrets are ignored; duplicate patterns are
 * stored once.
 * Returns 0, or -1 with errno ENOMEM, or EINVAL after compile.
 */
int	 redact_set_add(struct redact_set *, const void *, size_t);
/* Build the automaton; returns 0 or -1 (ENOMEM, E2BIG, EINVAL if twice). */
int	 redact_set_compile(struct redact_set *);
size_t	 redact_set_maxlen(const struct redact_set *);	/* longest pattern */
size_t	 redact_set_npatterns(const struct redact_set *); /* distinct ones */
size_t	 redact_set_memsize(const struct redact_set *);	/* automaton bytes */
/*
 * Call fn once per distinct pattern, as stored: without whitespace
 * (compiled sets only; tests, fuzzer).
 */
int	 redact_set_foreach(const struct redact_set *, redact_pattern_fn,
	    void *);
void	 redact_set_free(struct redact_set *);	/* zeroes all pattern memory */

/*
 * A stream emitting at most cap bytes of redacted output (SIZE_MAX: no
 * cap).  The set must be compiled and outlive the stream.  NULL and errno
 * on failure.
 */
struct redact *redact_new(const struct redact_set *, size_t);
/* Feed bytes; out() is called with redacted bytes ready to leave.  The
 * bytes are scanned where they are and nothing of them is used once the
 * call returns.  0 or -1 (EINVAL after redact_finish; ENOMEM, and the
 * stream takes no more). */
int	 redact_write(struct redact *, const void *, size_t, redact_out_fn,
	    void *);
/* End of stream: scan and flush the held-back tail.  0 or -1 (EINVAL when
 * called twice). */
int	 redact_finish(struct redact *, redact_out_fn, void *);
size_t	 redact_count(const struct redact *);	/* occurrences masked */
int	 redact_truncated(const struct redact *);	/* output hit the cap */
size_t	 redact_held(const struct redact *);	/* bytes held back now */
size_t	 redact_emitted(const struct redact *);	/* bytes given to out() */
void	 redact_free(struct redact *);		/* zeroes the window */

#endif /* REDACT_H */
