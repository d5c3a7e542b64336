/*
 * Redactor throughput on one core: synthetic CLI output (log lines, paths,
 * hex ids, numbers) with one planted secret every 64 KiB, redacted with
 * 0 to 100 random API-token-like secrets of 20-64 bytes and all their
 * forms, written in 4 KiB and 64 KiB chunks.  Prints MB/s (10^6 bytes).
 *
 * Then, with 30 secrets: the same text with the plants printed as CLIs
 * print them (base64 wrapped at 76 and 64, od -An -tx1, xxd -p, colon
 * hex), which the redactor must find across separators; and the peer
 * figure, one memmem(3) pass per secret over the text, in rounds that
 * alternate with the redactor's (the ratio holds on a loaded machine).
 *
 * -S len adds one more secret of len bytes (1-64): a short secret makes
 * the start filter probe every byte instead of every 4th.
 *
 * -c times on the CPU clock of the process instead of the wall clock: on
 * a shared machine, the time spent waiting for the core is left out.
 *
 * usage: redact [-c] [-m MiB] [-r rounds] [-S len]
 */

#include <sys/types.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "redact.h"

struct sink {
	size_t		 bytes;
	uint32_t	 sum;
};

static void	 usage(void) __attribute__((__noreturn__));
static uint32_t	 rnd(void);
static void	 sink_out(void *, const void *, size_t);
static size_t	 gen_text(uint8_t *, size_t);
static size_t	 plant_form(uint8_t *, const uint8_t *, size_t, int);
static double	 run_set(const struct redact_set *, const uint8_t *, size_t,
		    size_t, size_t, size_t *);
static void	 forms_table(const uint8_t *, size_t, uint8_t (*)[64],
		    const size_t *, size_t);
static double	 now(void);

static uint32_t	 seed = 0x7265646b;
static clockid_t clock_id = CLOCK_MONOTONIC;

static const char *words[] = {
	"INFO", "DEBUG", "WARN", "request", "completed", "user", "status",
	"ok", "GET", "POST", "/api/v1/items", "/usr/lib/x86_64-linux-gnu",
	"bytes", "duration", "ms", "cache", "miss", "hit", "upstream",
	"connection", "pool", "worker", "started", "listening", "on", "the",
	"and", "for", "with", "error:", "retrying", "deployment", "created",
	"pod", "default", "Running", "Pending", "NAME", "READY", "AGE",
	"commit", "Author:", "Date:", "Merge", "branch", "main", "origin",
	"{\"id\":", "\"name\":", "\"created_at\":", "true,", "false,", "null",
};

static void
usage(void)
{
	fprintf(stderr, "usage: redact [-c] [-m MiB] [-r rounds] [-S len]\n");
	exit(1);
}

static uint32_t
rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static void
sink_out(void *arg, const void *buf, size_t len)
{
	struct sink	*s = arg;

	s->bytes += len;
	s->sum += ((const uint8_t *)buf)[len - 1];
}

static double
now(void)
{
	struct timespec	 ts;

	clock_gettime(clock_id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Lines of words, numbers, timestamps and hex ids, like a CLI prints. */
static size_t
gen_text(uint8_t *p, size_t n)
{
	size_t	 o = 0, i, k;
	int	 len;
	char	 tmp[64];

	while (o + 128 < n) {
		len = snprintf(tmp, sizeof(tmp), "2024-05-%02u %02u:%02u:%02u ",
		    1 + rnd() % 28, rnd() % 24, rnd() % 60, rnd() % 60);
		memcpy(p + o, tmp, len);
		o += len;
		for (k = 3 + rnd() % 10; k > 0; k--) {
			switch (rnd() % 8) {
			case 0:
				len = snprintf(tmp, sizeof(tmp), "%u ",
				    rnd() % 100000);
				break;
			case 1:
				for (i = 0; i < 12; i++)
					tmp[i] = "0123456789abcdef"[rnd() % 16];
				tmp[i] = ' ';
				len = i + 1;
				break;
			default:
				len = snprintf(tmp, sizeof(tmp), "%s ",
				    words[rnd() % (sizeof(words) /
				    sizeof(words[0]))]);
				break;
			}
			if (o + len + 1 >= n)
				break;
			memcpy(p + o, tmp, len);
			o += len;
		}
		p[o++] = '\n';
	}
	while (o < n)
		p[o++] = '\n';
	return o;
}

/* The secret as a CLI prints it in form f; the bytes written. */
static size_t
plant_form(uint8_t *p, const uint8_t *s, size_t len, int f)
{
	static const char	 b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
	    "klmnopqrstuvwxyz0123456789+/";
	char			 enc[128];
	size_t			 i, n = 0, o = 0, width;
	uint32_t		 v;

	switch (f) {
	case 0:			/* base64, wrapped at 76 or 64 */
	case 1:
		for (i = 0; i + 3 <= len; i += 3) {
			v = s[i] << 16 | s[i + 1] << 8 | s[i + 2];
			enc[n++] = b64[v >> 18];
			enc[n++] = b64[(v >> 12) & 63];
			enc[n++] = b64[(v >> 6) & 63];
			enc[n++] = b64[v & 63];
		}
		if (len - i > 0) {
			v = s[i] << 16 | (len - i > 1 ? s[i + 1] << 8 : 0);
			enc[n++] = b64[v >> 18];
			enc[n++] = b64[(v >> 12) & 63];
			enc[n++] = len - i > 1 ? b64[(v >> 6) & 63] : '=';
			enc[n++] = '=';
		}
		width = f == 0 ? 76 : 64;
		for (i = 0; i < n; i++) {
			/* The break falls inside the token. */
			if (i == n / 2 || (i > 0 && i % width == 0))
				p[o++] = '\n';
			p[o++] = enc[i];
		}
		return o;
	case 2:			/* od -An -tx1 */
		for (i = 0; i < len; i++) {
			if (i > 0 && i % 16 == 0)
				p[o++] = '\n';
			o += snprintf((char *)p + o, 4, " %02x", s[i]);
		}
		return o;
	case 3:			/* xxd -p -c 8 */
		for (i = 0; i < len; i++) {
			if (i > 0 && i % 8 == 0)
				p[o++] = '\n';
			o += snprintf((char *)p + o, 3, "%02x", s[i]);
		}
		return o;
	default:		/* colon hex */
		for (i = 0; i < len; i++)
			o += snprintf((char *)p + o, 4, i > 0 ? ":%02X" :
			    "%02X", s[i]);
		return o;
	}
}

/* Best time of `rounds' passes over text in chunks; *count masked. */
static double
run_set(const struct redact_set *rs, const uint8_t *text, size_t size,
    size_t chunk, size_t rounds, size_t *count)
{
	struct redact	*r;
	struct sink	 sk;
	size_t		 j, off, len;
	double		 t, best = 1e9;

	for (j = 0; j < rounds; j++) {
		memset(&sk, 0, sizeof(sk));
		if ((r = redact_new(rs, SIZE_MAX)) == NULL)
			err(1, "redact_new");
		t = now();
		for (off = 0; off < size; off += len) {
			len = size - off < chunk ? size - off : chunk;
			redact_write(r, text + off, len, sink_out, &sk);
		}
		redact_finish(r, sink_out, &sk);
		t = now() - t;
		if (t < best)
			best = t;
		*count = redact_count(r);
		redact_free(r);
		if (sk.bytes == 0 && size > 0)
			errx(1, "no output");
	}
	return best;
}

/* 30 secrets: the forms printed with separators, and memmem per secret. */
static void
forms_table(const uint8_t *orig, size_t size, uint8_t (*secret)[64],
    const size_t *slen, size_t rounds)
{
	struct redact_set	*rs;
	uint8_t			*text;
	size_t			 off, plants = 0, count, i, f, hits = 0;
	double			 best, t, tm = 1e9;
	const uint8_t		*p;

	if ((text = malloc(size)) == NULL)
		err(1, "malloc");
	memcpy(text, orig, size);
	for (off = 32768, f = 0; off + 256 < size; off += 65536, f++) {
		i = rnd() % 30;
		plant_form(text + off, secret[i], slen[i], f % 5);
		plants++;
	}
	if ((rs = redact_set_new()) == NULL)
		err(1, "redact_set_new");
	for (i = 0; i < 30; i++)
		if (redact_set_add(rs, secret[i], slen[i]) == -1)
			err(1, "redact_set_add");
	if (redact_set_compile(rs) == -1)
		err(1, "redact_set_compile");
	/*
	 * The peer: one memmem pass per secret, no forms at all.  Its
	 * rounds alternate with the redactor's, so both best times come
	 * from the same stretch of a shared machine.
	 */
	best = 1e9;
	for (f = 0; f < rounds; f++) {
		t = run_set(rs, text, size, 65536, 1, &count);
		if (t < best)
			best = t;
		if (count < plants)
			errx(1, "forms: masked %zu of %zu planted", count,
			    plants);
		t = now();
		for (i = 0; i < 30; i++)
			for (p = text; (p = memmem(p, size - (p - text),
			    secret[i], slen[i])) != NULL; p++)
				hits++;
		t = now() - t;
		if (t < tm)
			tm = t;
	}
	printf("\nwith separators (base64 -w 76/64, od -An -tx1, xxd -p, "
	    "colon hex), 30 secrets, 64 KiB chunks:\n");
	printf("%-9s %-7s %s\n", "patterns", "masked", "MB/s");
	printf("%-9zu %-7zu %.0f\n", redact_set_npatterns(rs), count,
	    size / best / 1e6);
	redact_set_free(rs);

	printf("\nmemmem(3), one pass per secret, 30 secrets (raw form only): "
	    "%.0f MB/s (%zu hits)\n", size / tm / 1e6, hits / rounds);
	printf("redactor with every form / memmem: %.1fx\n", tm / best);
	free(text);
}

int
main(int argc, char *argv[])
{
	static const size_t	 counts[] = { 0, 1, 10, 30, 100 };
	static const size_t	 chunks[] = { 4096, 65536 };
	struct redact_set	*rs;
	uint8_t			*text, *orig, secret[100][64];
	size_t			 slen[100], mib = 64, rounds = 3, size;
	size_t			 shortlen = 0;
	size_t			 c, ch, i, j, off, plants, masked;
	double			 best, tcomp;
	int			 ch_;

	while ((ch_ = getopt(argc, argv, "cm:r:S:")) != -1) {
		switch (ch_) {
		case 'c':
			clock_id = CLOCK_PROCESS_CPUTIME_ID;
			break;
		case 'm':
			mib = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 'S':
			shortlen = strtoul(optarg, NULL, 10);
			if (shortlen == 0 || shortlen > 64)
				usage();
			break;
		default:
			usage();
		}
	}
	if (mib == 0 || mib > 4096 || rounds == 0)
		usage();
	size = mib << 20;
	if ((text = malloc(size)) == NULL || (orig = malloc(size)) == NULL)
		err(1, "malloc");
	gen_text(orig, size);
	for (i = 0; i < 100; i++) {
		slen[i] = 20 + rnd() % 45;
		for (j = 0; j < slen[i]; j++)
			secret[i][j] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
			    "opqrstuvwxyz0123456789-_"[rnd() % 64];
	}

	printf("%-8s %-9s %-7s %-9s %-8s %-6s %-7s %s\n", "secrets",
	    "patterns", "maxlen", "memory", "compile", "chunk", "masked",
	    "MB/s");
	for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		/* Plant a secret every 64 KiB, so the matcher works too. */
		memcpy(text, orig, size);
		plants = 0;
		if (counts[c] > 0)
			for (off = 32768; off + 64 < size; off += 65536) {
				i = rnd() % counts[c];
				memcpy(text + off, secret[i], slen[i]);
				plants++;
			}
		if ((rs = redact_set_new()) == NULL)
			err(1, "redact_set_new");
		for (i = 0; i < counts[c]; i++)
			if (redact_set_add(rs, secret[i], slen[i]) == -1)
				err(1, "redact_set_add");
		if (shortlen > 0 && counts[c] > 0 &&
		    redact_set_add(rs, secret[99], shortlen) == -1)
			err(1, "redact_set_add");
		tcomp = now();
		if (redact_set_compile(rs) == -1)
			err(1, "redact_set_compile");
		tcomp = now() - tcomp;
		for (ch = 0; ch < sizeof(chunks) / sizeof(chunks[0]); ch++) {
			best = run_set(rs, text, size, chunks[ch], rounds,
			    &masked);
			if (masked < plants)
				errx(1, "masked %zu of %zu planted", masked,
				    plants);
			printf("%-8zu %-9zu %-7zu %-9zu %-8.1f %-6zu %-7zu "
			    "%.0f\n", counts[c], redact_set_npatterns(rs),
			    redact_set_maxlen(rs), redact_set_memsize(rs),
			    tcomp * 1e3, chunks[ch], plants,
			    size / best / 1e6);
		}
		redact_set_free(rs);
	}
	forms_table(orig, size, secret, slen, rounds);
	free(text);
	free(orig);
	return 0;
}
