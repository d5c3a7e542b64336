# tregd -- top-level GNU Makefile.
#
#   make                 build tregd/tregd and tregctl/tregctl
#   make check           install missing dependencies (as root), build, run
#                        every test under kyua; SANITIZE=1 for ASan+UBSan,
#                        CHECK_JOBS=4 the cases run at once (1: one by one)
#   make check-pg        the PostgreSQL engine's tests on a throwaway
#                        server (scripts/pg.sh); make check runs it too
#   make run             a development daemon on 127.0.0.1:8790, state in ./run
#                        (PORT=8791 another port, RUNDIR= another directory)
#   make install         PREFIX=/usr/local DESTDIR=
#   make lint            the include rules of the layers (scripts/layers.sh,
#                        also run by make check), mandoc -Tlint, tregd -n
#                        on the example config, the systemd unit's score
#   make bench           the benchmarks in bench/
#   make fuzz            build and run the libFuzzer targets (clang)

PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
SYSTEMDDIR ?= /lib/systemd/system
YACC    ?= byacc
CC      ?= cc

PKGS     = libevent jansson sqlite3 libsodium libbsd-overlay libseccomp zlib \
	   libpcre2-8 libevent_openssl libssl libcrypto libpq
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
# Include paths follow the layers (README, "Layout"): common/ sees only
# itself; tregd/'s leaves see common/ and tregd/; a process folder sees
# those and itself; the vault's store engines see store.h and their own.
# make lint (scripts/layers.sh) checks the same rules on the #include
# lines, and -MMD -MP lets make see every header an object read.
CPPFLAGS += -D_GNU_SOURCE -Icommon $(PKG_CFLAGS)
CFLAGS   += $(DEBUG) $(WARN) $(HARDEN) -std=gnu11 -MMD -MP
LDFLAGS  += -pie -Wl,-z,relro,-z,now $(SANLD)
LDLIBS   += $(PKG_LIBS)

tregd/%.o:		CPPFLAGS += -Itregd
tregd/parent/%.o:	CPPFLAGS += -Itregd/parent
tregd/frontend/%.o:	CPPFLAGS += -Itregd/frontend
tregd/vault/%.o:	CPPFLAGS += -Itregd/vault -Itregd/vault/store
tregd/vault/store/%.o:	CPPFLAGS += -Itregd/vault/store
tregd/vault/store/sqlite/%.o: CPPFLAGS += -Itregd/vault/store/sqlite
tregd/vault/store/pg/%.o: CPPFLAGS += -Itregd/vault/store/pg
tregd/exec/%.o:		CPPFLAGS += -Itregd/exec
tregd/relay/%.o:	CPPFLAGS += -Itregd/relay
tregctl/%.o:		CPPFLAGS += -Itregd -Itregctl
# The unit tests reach into every layer (they test its pieces alone).
TEST_INC = -Itregd -Itregd/parent -Itregd/frontend -Itregd/vault \
	   -Itregd/vault/store -Itregd/vault/store/sqlite \
	   -Itregd/vault/store/pg -Itregd/exec -Itregd/relay -Itregctl

COMMON_SRCS = $(sort $(wildcard common/*.c))
COMMON_OBJS = $(COMMON_SRCS:.c=.o)
# tregd/'s leaves (the ones every process may call), then the processes.
LEAF_SRCS   = $(filter-out tregd/parse.c,$(sort $(wildcard tregd/*.c))) \
	      tregd/parse.c
PARENT_SRCS = $(sort $(wildcard tregd/parent/*.c))
FRONT_SRCS  = $(filter-out tregd/frontend/openapi_doc.c \
	      tregd/frontend/skill_doc.c,\
	      $(sort $(wildcard tregd/frontend/*.c))) tregd/frontend/openapi_doc.c \
	      tregd/frontend/skill_doc.c
VAULT_SRCS  = $(sort $(wildcard tregd/vault/*.c tregd/vault/store/*.c \
	      tregd/vault/store/sqlite/*.c tregd/vault/store/pg/*.c))
EXEC_SRCS   = $(filter-out tregd/exec/zygote.c,\
	      $(sort $(wildcard tregd/exec/*.c)))
RELAY_SRCS  = $(sort $(wildcard tregd/relay/*.c))
TREGD_SRCS  = $(LEAF_SRCS) $(PARENT_SRCS) $(FRONT_SRCS) $(VAULT_SRCS) \
	      $(EXEC_SRCS) $(RELAY_SRCS)
TREGD_OBJS  = $(TREGD_SRCS:.c=.o) tregd/exec/zygote_blob.o
CTL_SRCS    = $(sort $(wildcard tregctl/*.c))
CTL_OBJS    = $(CTL_SRCS:.c=.o)
UNIT_SRCS   = $(sort $(wildcard regress/unit/*_test.c))
UNIT_PROGS  = $(UNIT_SRCS:.c=)
# Unit tests may use the daemon's modules, but not its main().
TREGD_LIBOBJS = $(filter-out tregd/tregd.o,$(TREGD_OBJS))
ALL_OBJS    = $(COMMON_OBJS) $(TREGD_SRCS:.c=.o) $(CTL_OBJS) $(ZYG_OBJS)
BUILD_DIRS  = common tregd tregd/parent tregd/frontend tregd/vault \
	      tregd/vault/store tregd/vault/store/sqlite tregd/vault/store/pg \
	      tregd/exec tregd/exec/zygote tregd/relay tregctl

# Rebuild everything when the flags change (SANITIZE=1 and back).
FLAGS_STAMP = .build-flags
FLAGS_NOW  := $(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
ifneq ($(FLAGS_NOW),$(shell cat $(FLAGS_STAMP) 2>/dev/null))
$(shell rm -f $(addsuffix /*.o,$(BUILD_DIRS)) $(UNIT_PROGS) \
    tregd/exec/zygote/tregd-zygote \
    tregd/tregd tregctl/tregctl; echo '$(FLAGS_NOW)' > $(FLAGS_STAMP))
endif

.PHONY: all check check-build check-pg deps run install lint lint-layers \
	bench fuzz clean

all: tregd/tregd tregctl/tregctl

common/libcommon.a: $(COMMON_OBJS)
	rm -f $@
	ar rcs $@ $^

tregd/parse.c: tregd/parse.y
	$(YACC) -o $@ $<

# GET /openapi.json and GET /skill.md (treg's skill bootstrap fetches
# it): the frontend's chroot has no files, so each document is compiled
# in, its bytes written out by od(1).  $(call embed,FILE,NAME)
embed = { echo '/* Made from $(1) by make: do not edit. */'; \
	    echo '\#include "frontend.h"'; \
	    echo 'const char $(2)[] = {'; \
	    od -An -v -tx1 $(1) | \
	    sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	    echo '};'; \
	    echo 'const size_t $(2)_len = sizeof($(2));'; \
	    } > $@.tmp && mv $@.tmp $@
tregd/frontend/openapi_doc.c: doc/openapi.json
	$(call embed,doc/openapi.json,openapi_doc)
tregd/frontend/skill_doc.c: doc/skill.md
	$(call embed,doc/skill.md,skill_doc)

tregd/parse.o: CFLAGS += -Wno-missing-prototypes -Wno-sign-compare \
	-Wno-unused-but-set-variable

# exec's zygote: a small static program of its own (every init is a clone
# of it, not of exec's ~250 mappings), never sanitized (a static binary
# cannot be), carried in tregd (tregd/exec/zygote_blob.S).
ZYG_OBJS   = tregd/exec/zygote/zygote.o tregd/exec/zygote/exec_child.o \
	     tregd/exec/zygote/sandbox_child.o
ZYG_CFLAGS = -O2 -g -D_FORTIFY_SOURCE=2 $(WARN) $(HARDEN) -std=gnu11 -MMD -MP
tregd/exec/zygote/exec_child.o: tregd/exec/exec_child.c
tregd/exec/zygote/sandbox_child.o: common/sandbox_child.c
tregd/exec/zygote/zygote.o: tregd/exec/zygote.c
$(ZYG_OBJS):
	@mkdir -p tregd/exec/zygote
	$(CC) $(CPPFLAGS) -Itregd -Itregd/exec $(ZYG_CFLAGS) -c -o $@ \
	    $(filter %.c,$^)
tregd/exec/zygote/tregd-zygote: $(ZYG_OBJS)
	$(CC) -static-pie -Wl,-z,relro,-z,now -o $@ $(ZYG_OBJS)
tregd/exec/zygote_blob.o: tregd/exec/zygote_blob.S \
    tregd/exec/zygote/tregd-zygote
	$(CC) -c -o $@ tregd/exec/zygote_blob.S

tregd/tregd: $(TREGD_OBJS) common/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $(TREGD_OBJS) common/libcommon.a $(LDLIBS)

tregctl/tregctl: $(CTL_OBJS) common/libcommon.a
	$(CC) $(LDFLAGS) -o $@ $(CTL_OBJS) common/libcommon.a $(LDLIBS)

# Headers an object read, as the compiler saw them (-MMD -MP).
-include $(ALL_OBJS:.o=.d)

# Every atf-c program: the leak check's settings (regress/lib/lsan.c).
TEST_LIB = regress/lib/lsan.c

# The parser test compiles tregctl/parser.c in.
regress/unit/ctlparser_test: tregctl/parser.c tregctl/parser.h
# The redactor's test shares its naive reference with the fuzzer.
regress/unit/redact_test: regress/unit/redact_test.c regress/lib/redact_ref.c \
    regress/lib/redact_ref.h $(TEST_LIB) $(TREGD_LIBOBJS) common/libcommon.a
	$(CC) $(CPPFLAGS) $(TEST_INC) $(CFLAGS) -Iregress/lib $(LDFLAGS) \
	    -o $@ $< regress/lib/redact_ref.c $(TEST_LIB) $(TREGD_LIBOBJS) \
	    common/libcommon.a $(LDLIBS) -latf-c

# The PostgreSQL store tests share the creation of their database.
regress/unit/store_pg_test regress/unit/store_org_test \
    regress/unit/store_tool_test regress/unit/store_project_test \
    regress/unit/store_health_test regress/unit/store_observed_test: \
    regress/unit/%: \
    regress/unit/%.c regress/lib/pgdb.c regress/lib/pgdb.h \
    $(TEST_LIB) $(TREGD_LIBOBJS) common/libcommon.a
	$(CC) $(CPPFLAGS) $(TEST_INC) $(CFLAGS) -Iregress/lib $(LDFLAGS) \
	    -o $@ $< regress/lib/pgdb.c $(TEST_LIB) $(TREGD_LIBOBJS) \
	    common/libcommon.a $(LDLIBS) -latf-c

# The egress proxy alone, driven by egress_proxy_test (atf-sh).
regress/unit/egress_harness: regress/unit/egress_harness.c $(TREGD_LIBOBJS) \
    common/libcommon.a
	$(CC) $(CPPFLAGS) $(TEST_INC) $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(TREGD_LIBOBJS) common/libcommon.a $(LDLIBS)

regress/unit/%_test: regress/unit/%_test.c $(TEST_LIB) $(TREGD_LIBOBJS) \
    common/libcommon.a
	$(CC) $(CPPFLAGS) $(TEST_INC) $(CFLAGS) $(LDFLAGS) -o $@ $< \
	    $(TEST_LIB) $(TREGD_LIBOBJS) common/libcommon.a $(LDLIBS) -latf-c
-include $(UNIT_PROGS:=.d)

check-build: all $(UNIT_PROGS) regress/unit/egress_harness

# Test cases at once under kyua (each daemon has its own port, directories,
# database and block of run users: regress/integration/lib.sh; the cases
# that cannot share the machine are is_exclusive in their Kyuafile).
CHECK_JOBS ?= 4
KYUA_RUN = kyua -v parallelism=$(CHECK_JOBS)

# Dependencies first: on a fresh machine nothing below builds without them.
check:
	@sh scripts/deps.sh
	@sh scripts/layers.sh
	$(MAKE) check-build
	cd regress && { $(SANENV) $(KYUA_RUN) test -k Kyuafile; rc=$$?; \
	    [ $$rc -eq 0 ] || kyua report --verbose --results-filter broken,failed; \
	    $(MAKE) -C .. check-pg || rc=1; exit $$rc; }

# The second pass, on a throwaway PostgreSQL server started and stopped
# here: the whole integration suite, each daemon on a fresh database
# (regress/integration/lib.sh), less the cases that exist only with
# sqlite (regress/integration/sqlite-only, each with why), and the
# engine's unit tests (store_*_test but the sqlite store_test).
# PG_CASES= runs only those kyua filters.
PG_UNITS = $(filter-out unit/store_test,\
	   $(patsubst regress/%.c,%,$(wildcard regress/unit/store_*_test.c)))
check-pg: check-build
	@pg=$$(sh scripts/pg.sh start) || exit 1; \
	    trap 'sh scripts/pg.sh stop "$$pg"' EXIT INT TERM; \
	    cd regress && { cases="$(PG_CASES)"; [ -n "$$cases" ] || \
	    cases="$$(sh ../scripts/pg-cases.sh) $(PG_UNITS)" || \
	    exit 1; $(SANENV) $(KYUA_RUN) -v test_suites.tregd.engine=pg \
	    -v test_suites.tregd.pg_host="$$pg" test -k Kyuafile $$cases; \
	    rc=$$?; [ $$rc -eq 0 ] || kyua report --verbose \
	    --results-filter broken,failed; cd ..; exit $$rc; }

deps:
	@sh scripts/deps.sh

run: all
	@PORT='$(PORT)' RUNDIR='$(RUNDIR)' sh scripts/run.sh

install: all
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(MANDIR)/man5 \
	    $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(SYSCONFDIR) \
	    $(DESTDIR)$(SYSTEMDDIR)
	install -m 0555 tregd/tregd $(DESTDIR)$(SBINDIR)/tregd
	install -m 0555 tregctl/tregctl $(DESTDIR)$(SBINDIR)/tregctl
	install -m 0444 man/tregd.8 man/tregctl.8 $(DESTDIR)$(MANDIR)/man8/
	install -m 0444 man/tregd.conf.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0444 man/tregd-api.7 $(DESTDIR)$(MANDIR)/man7/
	[ -e $(DESTDIR)$(SYSCONFDIR)/tregd.conf ] || \
	    install -m 0644 etc/tregd.conf $(DESTDIR)$(SYSCONFDIR)/tregd.conf
	sed 's,@SBINDIR@,$(SBINDIR),g' etc/tregd.service > \
	    $(DESTDIR)$(SYSTEMDDIR)/tregd.service
	[ -n "$(DESTDIR)" ] || sh scripts/deps.sh users

# The include rules of the layers (scripts/layers.sh; make check runs it).
lint-layers:
	@sh scripts/layers.sh

lint: all lint-layers
	mandoc -Tlint -Wwarning man/tregd.8 man/tregd.conf.5 man/tregctl.8 \
	    man/tregd-api.7
	./tregd/tregd -n -f etc/tregd.conf
	@sed 's,@SBINDIR@,$(SBINDIR),g' etc/tregd.service > .lint-tregd.service
	@systemd-analyze security --offline=yes --threshold=40 \
	    $(CURDIR)/.lint-tregd.service > .lint-tregd.score 2>&1; rc=$$?; \
	    sed -n 's/^.*Overall exposure level for [^:]*: /tregd.service exposure: /p' \
	    .lint-tregd.score; rm -f .lint-tregd.service .lint-tregd.score; \
	    [ $$rc -eq 0 ] || echo "tregd.service: exposure above 4.0" >&2; \
	    exit $$rc

bench: all
	sh bench/run-all.sh

fuzz:
	$(MAKE) -C regress/fuzz run
	$(MAKE) -C regress/fuzz http-run
	$(MAKE) -C regress/fuzz egress-run

clean:
	rm -f $(addsuffix /*.o,$(BUILD_DIRS)) $(addsuffix /*.d,$(BUILD_DIRS)) \
	    common/libcommon.a tregd/parse.c tregd/frontend/openapi_doc.c \
	    tregd/frontend/skill_doc.c \
	    tregd/exec/zygote/tregd-zygote tregd/tregd tregctl/tregctl \
	    $(UNIT_PROGS) $(UNIT_PROGS:=.d) regress/unit/egress_harness \
	    regress/unit/egress_harness.d $(FLAGS_STAMP)
