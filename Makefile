# chidori — plain Makefile.  `make` builds build/chidori and build/chidori-worker.
# `make test` runs every suite and ends with "tests: N passed, N failed".
# `make asan` builds with AddressSanitizer + UBSan (clang) into build-asan/ and runs the same suite.

PREFIX     ?= /usr/local
LIBEXECDIR ?= $(PREFIX)/libexec/chidori
BUILD      ?= build
CC         ?= gcc
SAN        ?=
PKG_CONFIG ?= pkg-config

PKGS_WORKER := javascriptcoregtk-4.1 libcjson
PKGS_HOST   := libcjson sqlite3 libseccomp libcap libmnl
PKGS_CLI    := javascriptcoregtk-4.1 $(PKGS_HOST) libcurl

WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Werror=implicit-function-declaration -Werror=vla
CPPFLAGS += -I. -DCHIDORI_LIBEXECDIR='"$(LIBEXECDIR)"'
OPTFLAGS ?= -O2 -g
override CFLAGS := $(OPTFLAGS) -std=gnu11 $(WARN) -fno-strict-aliasing -fstack-protector-strong -fPIC -MMD -MP $(CFLAGS)
ifeq ($(SAN),1)
override CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
override LDFLAGS += -fsanitize=address,undefined
endif

cflags_of = $(shell $(PKG_CONFIG) --cflags $(1))
libs_of   = $(shell $(PKG_CONFIG) --libs $(1))

COMMON_SRC   := $(wildcard common/*.c)
PROTO_SRC    := $(wildcard proto/*.c)
BROKER_SRC   := $(wildcard broker/*.c)
LAUNCHER_SRC := $(filter-out launcher/main.c launcher/seccomp-gen.c,$(wildcard launcher/*.c))
CGROUP_SRC   := $(wildcard cgroup/*.c)
NETNS_SRC    := $(wildcard netns/*.c)
ENGINE_SRC   := $(filter-out engine/worker.c,$(wildcard engine/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst %.S,$(BUILD)/obj/%.o,$(1)))

ENGINE_OBJ := $(call obj,$(ENGINE_SRC) engine/embed.S)
LIB_OBJ    := $(call obj,$(COMMON_SRC) $(PROTO_SRC) $(BROKER_SRC) $(LAUNCHER_SRC) $(CGROUP_SRC) $(NETNS_SRC)) $(ENGINE_OBJ) \
              $(BUILD)/obj/gen/seccomp_bpf.o
CLI_LIBS    = $(call libs_of,$(PKGS_CLI)) -lpthread
HOST_LIBS   = $(call libs_of,$(PKGS_HOST)) -lpthread -ldl
# libcurl and what uses it load on first use (broker/net.h, decision 30).
NET_SRC    := broker/http.c broker/llm.c broker/net-api.c
NET_OBJ    := $(call obj,$(NET_SRC))
NET_LIBS    = $(call libs_of,libcurl libcjson)
HOST_OBJ    = $(filter-out $(ENGINE_OBJ) $(NET_OBJ),$(LIB_OBJ))
WORKER_LIBS = $(call libs_of,$(PKGS_WORKER)) -lpthread

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
PROBE_SRC := $(wildcard tests/probes/*.c)
PROBE_BIN := $(patsubst tests/probes/%.c,$(BUILD)/probes/%,$(PROBE_SRC))

.PHONY: all deps test unit asan fuzz bench lint install clean check-deps test-vm
all: $(BUILD)/chidori $(BUILD)/chidori-worker $(BUILD)/libchidori-engine.so $(BUILD)/libchidori-net.so $(BUILD)/jsrun $(BUILD)/vfsrun $(UNIT_BIN) $(PROBE_BIN) $(BUILD)/jsc_hello

deps:
	./scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,$(PKGS_CLI)) -c $< -o $@

$(BUILD)/obj/engine/embed.o: engine/embed.S engine/web.js engine/prelude.js engine/fetch.js engine/crypto.js engine/fs.js
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) -c $< -o $@

# The seccomp filters are compiled once, at build time, by a generator that
# uses the same tables (launcher/seccomp.c) and the same compiler flags.
$(BUILD)/seccomp-gen: launcher/seccomp-gen.c launcher/seccomp.c common/err.c launcher/seccomp.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $(call cflags_of,libseccomp) launcher/seccomp-gen.c launcher/seccomp.c common/err.c -o $@ $(LDFLAGS) $(call libs_of,libseccomp)

$(BUILD)/gen/seccomp_bpf.c: $(BUILD)/seccomp-gen
	@mkdir -p $(dir $@)
	$(BUILD)/seccomp-gen >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/seccomp_bpf.o: $(BUILD)/gen/seccomp_bpf.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) -c $< -o $@

$(BUILD)/libchidori.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The launcher does not link JavaScriptCore: loading it costs ~30 ms of
# dynamic linking per start.  Only --no-isolate opens the engine, from
# libchidori-engine.so (dlopen), next to chidori or in $(LIBEXECDIR).
$(BUILD)/libchidori-host.a: $(HOST_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/chidori: $(BUILD)/obj/launcher/main.o $(BUILD)/libchidori-host.a
	$(CC) $(LDFLAGS) -o $@ $^ $(HOST_LIBS)

$(BUILD)/libchidori-engine.so: $(ENGINE_OBJ) $(call obj,common/err.c $(PROTO_SRC))
	$(CC) -shared -Wl,-Bsymbolic $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

$(BUILD)/libchidori-net.so: $(NET_OBJ) $(call obj,broker/http-errors.c broker/ssrf.c common/err.c common/util.c)
	$(CC) -shared -Wl,-Bsymbolic $(LDFLAGS) -o $@ $^ $(NET_LIBS)

$(BUILD)/chidori-worker: $(BUILD)/obj/engine/worker.o $(ENGINE_OBJ) $(call obj,common/err.c $(PROTO_SRC))
	$(CC) $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libchidori.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,$(PKGS_CLI) cmocka) $< -o $@ $(LDFLAGS) $(BUILD)/libchidori.a $(CLI_LIBS) $(call libs_of,cmocka)

$(BUILD)/probes/%: tests/probes/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ $(LDFLAGS)

$(BUILD)/jsrun: tests/js/jsrun.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,javascriptcoregtk-4.1) $< -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1)

# jsrun with natives over the real broker/vfs.c: the node:fs tests against the parent's tree.
$(BUILD)/vfsrun: tests/js/jsrun.c tests/js/vfsrun.c broker/vfs.c common/text.c common/util.c common/err.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $(call cflags_of,javascriptcoregtk-4.1 libcjson) $^ -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1 libcjson)

$(BUILD)/jsc_hello: tests/bench/jsc_hello.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,javascriptcoregtk-4.1) $< -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1)

# Builds (installing missing Debian packages first) and runs every suite.
FUZZ_BIN := $(BUILD)/fuzz_frame $(BUILD)/fuzz_policy $(BUILD)/fuzz_vfs

test: check-deps all $(FUZZ_BIN)
	BUILD=$(BUILD) ./scripts/run-tests.sh

# cgroup v2 and a second kernel (6.1) in a qemu guest; `make test` runs it too
# when qemu is installed (scripts/deps.sh installs it).
test-vm: all
	tests/vm/setup.sh && tests/vm/run.sh tests/vm/guest-run.sh

check-deps:
	@./scripts/deps.sh >/dev/null

asan:
	$(MAKE) BUILD=build-asan CC=clang SAN=1 OPTFLAGS="-O1 -g" test

fuzz: $(FUZZ_BIN)
	for f in $(FUZZ_BIN); do ./scripts/fuzz.sh $$f || exit 1; done

$(BUILD)/fuzz_frame: tests/fuzz/fuzz_frame.c proto/proto.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson)

$(BUILD)/fuzz_policy: tests/fuzz/fuzz_policy.c broker/policy.c common/text.c common/util.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson)

$(BUILD)/fuzz_vfs: tests/fuzz/fuzz_vfs.c broker/vfs.c common/text.c common/util.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson)

bench: all
	BUILD=$(BUILD) ./scripts/bench.sh

lint:
	./scripts/lint.sh

install: $(BUILD)/chidori $(BUILD)/chidori-worker $(BUILD)/libchidori-engine.so $(BUILD)/libchidori-net.so $(BUILD)/libchidori-net.so
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(LIBEXECDIR)
	install -m 0755 $(BUILD)/chidori $(DESTDIR)$(PREFIX)/bin/chidori
	install -m 0755 $(BUILD)/chidori-worker $(DESTDIR)$(LIBEXECDIR)/chidori-worker
	install -m 0755 $(BUILD)/libchidori-engine.so $(DESTDIR)$(LIBEXECDIR)/libchidori-engine.so
	install -m 0755 $(BUILD)/libchidori-net.so $(DESTDIR)$(LIBEXECDIR)/libchidori-net.so

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
