# tregd -- top-level GNU Makefile.
#
#   make                 build tregd/tregd and tregctl/tregctl
#   make check           install missing dependencies (as root), build, run
#                        every test under kyua; SANITIZE=1 for ASan+UBSan
#   make run             a development daemon on 127.0.0.1:8790, state in ./run
#   make install         PREFIX=/usr/local DESTDIR=
#   make lint            mandoc -Tlint and tregd -n on the example config
#   make bench           the benchmarks in bench/
#   make fuzz            build the libFuzzer targets (clang)

PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
SYSTEMDDIR ?= /lib/systemd/system
YACC    ?= byacc
CC      ?= cc

PKGS     = libevent jansson sqlite3 libsodium libbsd-overlay libseccomp \
	   libevent_openssl libssl libcrypto
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

WARN     = -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
	   -Wpointer-arith -Wmissing-prototypes -Wstrict-prototypes
HARDEN   = -fstack-protector-strong -fPIE -fstack-clash-protection
ifeq ($(SANITIZE),1)
DEBUG    = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	   -fno-sanitize-recover=undefined -DTREGD_SANITIZE
SANLD    = -fsanitize=address,undefined
SANENV   = env LSAN_OPTIONS=suppressions=$(CURDIR)/regress/lsan.supp:print_suppressions=0 \
	   ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
else
DEBUG    = -O2 -g -D_FORTIFY_SOURCE=2
SANLD    =
endif
CPPFLAGS += -D_GNU_SOURCE -Icommon -Itregd $(PKG_CFLAGS)
CFLAGS   += $(DEBUG) $(WARN) $(HARDEN) -std=gnu11
LDFLAGS  += -pie -Wl,-z,relro,-z,now $(SANLD)
LDLIBS   += $(PKG_LIBS)

COMMON_SRCS = $(sort $(wildcard common/*.c))
COMMON_OBJS = $(COMMON_SRCS:.c=.o)
TREGD_SRCS  = $(filter-out tregd/parse.c,$(sort $(wildcard tregd/*.c))) \
	      tregd/parse.c
TREGD_OBJS  = $(TREGD_SRCS:.c=.o)
CTL_SRCS    = $(sort $(wildcard tregctl/*.c))
CTL_OBJS    = $(CTL_SRCS:.c=.o)
UNIT_SRCS   = $(sort $(wildcard regress/unit/*_test.c))
UNIT_PROGS  = $(UNIT_SRCS:.c=)
# Unit tests may use the daemon's modules, but not its main().
TREGD_LIBOBJS = $(filter-out tregd/tregd.o,$(TREGD_OBJS))

# Rebuild everything when the flags change (SANITIZE=1 and back).
FLAGS_STAMP = .build-flags
FLAGS_NOW  := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
ifneq ($(FLAGS_NOW),$(shell cat $(FLAGS_STAMP) 2>/dev/null))
$(shell rm -f common/*.o tregd/*.o tregctl/*.o regress/*/*.o $(UNIT_PROGS) \
    tregd/tregd tregctl/tregctl; echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))
endif

.PHONY: all check check-build deps run install lint bench fuzz clean

all: tregd/tregd tregctl/tregctl

common/libcommon.a: $(COMMON_OBJS)
	rm -f $@
	ar rcs $@ $^

tregd/parse.c: tregd/parse.y
	$(YACC) -o $@ $<

tregd/parse.o: CFLAGS += -Wno-missing-prototypes -Wno-sign-compare \
	-Wno-unused-but-set-variable

tregd/tregd: $(TREGD_OBJS) common/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $(TREGD_OBJS) common/libcommon.a $(LDLIBS)

tregctl/tregctl: $(CTL_OBJS) common/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $(CTL_OBJS) common/libcommon.a $(LDLIBS)

$(COMMON_OBJS) $(TREGD_OBJS) $(CTL_OBJS): common/*.h tregd/tregd.h
$(TREGD_OBJS): tregd/vault.h
$(CTL_OBJS): tregctl/*.h
# The parser test compiles tregctl/parser.c in.
regress/unit/ctlparser_test: tregctl/parser.c tregctl/parser.h

regress/unit/%_test: regress/unit/%_test.c $(TREGD_LIBOBJS) common/libcommon.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(TREGD_LIBOBJS) \
	    common/libcommon.a $(LDLIBS) -latf-c

check-build: all $(UNIT_PROGS)

# Dependencies first: on a fresh machine nothing below builds without them.
check:
	@sh scripts/deps.sh
	$(MAKE) check-build
	cd regress && { $(SANENV) kyua test -k Kyuafile; rc=$$?; \
	    [ $$rc -eq 0 ] || kyua report --verbose --results-filter broken,failed; \
	    exit $$rc; }

deps:
	@sh scripts/deps.sh

run: all
	@sh scripts/run.sh

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR) \
	    $(DESTDIR)$(SYSTEMDDIR)
	install -m 0555 tregd/tregd $(DESTDIR)$(SBINDIR)/tregd
	install -m 0555 tregctl/tregctl $(DESTDIR)$(SBINDIR)/tregctl
	install -m 0444 man/tregd.8 man/tregctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0444 man/tregd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	[ -e $(DESTDIR)$(SYSCONFDIR)/tregd.conf ] || \
	    install -m 0644 etc/tregd.conf $(DESTDIR)$(SYSCONFDIR)/tregd.conf
	sed 's,@SBINDIR@,$(SBINDIR),g' etc/tregd.service > \
	    $(DESTDIR)$(SYSTEMDDIR)/tregd.service
	[ -n "$(DESTDIR)" ] || sh scripts/deps.sh users

lint: all
	mandoc -Tlint -Wwarning man/tregd.8 man/tregd.conf.5 man/tregctl.8
	./tregd/tregd -n -f etc/tregd.conf

bench: all
	sh bench/run-all.sh

fuzz:
	$(MAKE) -C regress/fuzz
	$(MAKE) -C regress/fuzz http-run

clean:
	rm -f common/*.o common/libcommon.a tregd/*.o tregd/parse.c \
	    tregctl/*.o tregd/tregd tregctl/tregctl $(UNIT_PROGS) \
	    $(FLAGS_STAMP)
