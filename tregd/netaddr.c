/*
 * netaddr.c: which IP addresses are public unicast.  One rule for the
 * vault (a base_url given as an address literal, at registration) and
 * the relay (every address a host name resolved to, just before its
 * connect): both ask here, so the two checks cannot drift apart.
 *
 * A leaf: libc only.
 */

#include <sys/types.h>

#include <stdint.h>
#include <string.h>

#include "tregd.h"

static uint32_t	 ip4_at(const unsigned char *);

struct net4 {
	uint32_t	 net;
	int		 bits;
};

/* RFC 6890 and friends: everything that is not public unicast. */
static const struct net4 ip4_special[] = {
	{ 0x00000000, 8 },	/* "this network", 0.0.0.0 */
	{ 0x0a000000, 8 },	/* private */
	{ 0x64400000, 10 },	/* CGNAT shared space */
	{ 0x7f000000, 8 },	/* loopback */
	{ 0xa9fe0000, 16 },	/* link-local, cloud metadata */
	{ 0xac100000, 12 },	/* private */
	{ 0xc0000000, 24 },	/* IETF protocol assignments */
	{ 0xc0000200, 24 },	/* TEST-NET-1 */
	{ 0xc0586300, 24 },	/* 6to4 relay anycast */
	{ 0xc0a80000, 16 },	/* private */
	{ 0xc6120000, 15 },	/* benchmarking */
	{ 0xc6336400, 24 },	/* TEST-NET-2 */
	{ 0xcb007100, 24 },	/* TEST-NET-3 */
	{ 0xe0000000, 4 },	/* multicast */
	{ 0xf0000000, 4 },	/* reserved, broadcast */
};

int
ip4_is_public(uint32_t a)
{
	size_t		 i;
	uint32_t	 mask;

	for (i = 0; i < sizeof(ip4_special) / sizeof(ip4_special[0]); i++) {
		mask = 0xffffffffU << (32 - ip4_special[i].bits);
		if ((a & mask) == ip4_special[i].net)
			return (0);
	}
	return (1);
}

static uint32_t
ip4_at(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3]);
}

/*
 * Public means global unicast (2000::/3) outside the special blocks; an
 * address that embeds an IPv4 one (mapped, compatible, NAT64, 6to4) is
 * as public as that address.
 */
int
ip6_is_public(const unsigned char a[16])
{
	static const unsigned char	 mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};
	static const unsigned char	 nat64[12] = {
		0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0
	};
	static const unsigned char	 zero[12];

	if (memcmp(a, mapped, 12) == 0 || memcmp(a, nat64, 12) == 0)
		return (ip4_is_public(ip4_at(a + 12)));
	if (memcmp(a, zero, 12) == 0)	/* ::, ::1, IPv4-compatible */
		return (0);
	if (a[0] == 0x20 && a[1] == 0x02)	/* 6to4 */
		return (ip4_is_public(ip4_at(a + 2)));
	if ((a[0] & 0xe0) != 0x20)	/* not 2000::/3 */
		return (0);
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] < 0x02)
		return (0);		/* 2001::/23 incl. Teredo */
	if (a[0] == 0x20 && a[1] == 0x01 && a[2] == 0x0d && a[3] == 0xb8)
		return (0);		/* documentation */
	if (a[0] == 0x3f && a[1] == 0xff && (a[2] & 0xf0) == 0)
		return (0);		/* documentation, 3fff::/20 */
	return (1);
}
