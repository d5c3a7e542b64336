/*
 * vault_placeholder.c: the stand-in a keyless run holds for each value
 * injected into it (SPEC.md section 6a).  The egress proxy swaps it for
 * the real value on the way out, so the placeholder must look like the
 * value to the CLI (a CLI may check a key's prefix or shape before it
 * sends anything) and must be worth nothing anywhere else.
 *
 * The shape: the value's prefix kept (up to two groups of letters each
 * ending in '_' or '-' within the first 12 bytes: "sk_live_", "ghp_",
 * "xoxb-", "github_pat_"; or "AKIA"/"ASIA" of an AWS access key id),
 * then position by position a random character of the same class (lower
 * case, upper case, digit), any other byte kept where it is (the dots of
 * a JWT, the dashes of a Slack token).  A value shorter than
 * PLACEHOLDER_MIN bytes gets a longer placeholder, padded in the class
 * of its last letter or digit, so every placeholder carries enough
 * randomness to be unique and to be found again in a request.
 */

#include <sys/types.h>

#include <ctype.h>
#include <string.h>

#include <sodium.h>

#include "vault.h"

#define PREFIX_SPAN	12	/* a prefix's separators lie within it */
#define PREFIX_GROUPS	2
#define RANDOM_MIN	12	/* random positions a placeholder needs */

static int	 aws_key_id(const char *, size_t);
static char	 class_random(int);

/* An AWS access key id: AKIA or ASIA and 16 upper-case letters or digits. */
static int
aws_key_id(const char *v, size_t len)
{
	size_t	 i;

	if (len != 20 || (memcmp(v, "AKIA", 4) != 0 &&
	    memcmp(v, "ASIA", 4) != 0))
		return (0);
	for (i = 4; i < len; i++)
		if (!isupper((unsigned char)v[i]) &&
		    !isdigit((unsigned char)v[i]))
			return (0);
	return (1);
}

/* The bytes of v kept as they are at its start. */
size_t
placeholder_prefix(const char *v, size_t len)
{
	size_t	 i = 0, j, end = 0;
	int	 groups;

	if (aws_key_id(v, len))
		return (4);
	for (groups = 0; groups < PREFIX_GROUPS; groups++) {
		for (j = i; j < len && j < PREFIX_SPAN &&
		    isalpha((unsigned char)v[j]); j++)
			;
		if (j == i || j >= len || j >= PREFIX_SPAN ||
		    (v[j] != '_' && v[j] != '-'))
			break;
		i = end = j + 1;
	}
	return (end);
}

/* A random character of c's class; 0 if c is of none. */
static char
class_random(int c)
{
	if (islower(c))
		return ('a' + randombytes_uniform(26));
	if (isupper(c))
		return ('A' + randombytes_uniform(26));
	if (isdigit(c))
		return ('0' + randombytes_uniform(10));
	return (0);
}

/*
 * Write the placeholder of the len bytes at v to out (outsz at least
 * PLACEHOLDER_LEN(len) + 1, NUL-terminated), its length to *outlen.
 * -1 when v has too few letters and digits to stand in for (a value
 * of punctuation cannot be told from its placeholder).
 */
int
placeholder_make(const char *v, size_t len, char *out, size_t outsz,
    size_t *outlen)
{
	size_t	 i, pre, n, nrandom = 0;
	int	 last = 'a';
	char	 r;

	n = PLACEHOLDER_LEN(len);
	if (outsz < n + 1)
		return (-1);
	pre = placeholder_prefix(v, len);
	memcpy(out, v, pre);
	for (i = pre; i < len; i++) {
		if ((r = class_random((unsigned char)v[i])) == 0) {
			out[i] = v[i];
			continue;
		}
		last = (unsigned char)v[i];
		out[i] = r;
		nrandom++;
	}
	for (; i < n; i++, nrandom++)
		out[i] = class_random(last);
	out[n] = '\0';
	if (nrandom < RANDOM_MIN) {
		sodium_memzero(out, outsz);
		return (-1);
	}
	*outlen = n;
	return (0);
}
