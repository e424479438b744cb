# chidori — plain Makefile.  `make` builds build/chidori and build/chidori-worker.
# `make test` runs every suite and ends with "tests: N passed, N failed".
# `make asan` builds with AddressSanitizer + UBSan (clang) into build-asan/ and runs the same suite.

PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBEXECDIR ?= $(PREFIX)/libexec/chidori
DATADIR    ?= $(PREFIX)/share
BUILD      ?= build
CC         ?= gcc
SAN        ?=
PKG_CONFIG ?= pkg-config

PKGS_WORKER := javascriptcoregtk-4.1 libcjson
PKGS_HOST   := libcjson sqlite3 libseccomp libcap
# libmnl: sandbox/netns/describe.c, the tests' list of a namespace's links.
PKGS_CLI    := javascriptcoregtk-4.1 $(PKGS_HOST) libmnl libcurl libpq

WARN     := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-format-nonliteral -Werror=implicit-function-declaration -Werror=vla
CPPFLAGS += -I.
# Where the installed binary looks for its worker and libraries: relative to
# itself first (common/dlib.c), so an install to any PREFIX works as built.
LIBEXEC_REL := $(shell realpath -m --relative-to='$(BINDIR)' '$(LIBEXECDIR)')
DIRS_FLAGS := -DCHIDORI_LIBEXECDIR='"$(LIBEXECDIR)"' -DCHIDORI_LIBEXEC_REL='"$(LIBEXEC_REL)"'
OPTFLAGS ?= -O2 -g
override CFLAGS := $(OPTFLAGS) -std=gnu11 $(WARN) -fno-strict-aliasing -fstack-protector-strong -fPIC -MMD -MP $(CFLAGS)
ifeq ($(SAN),1)
override CFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
override LDFLAGS += -fsanitize=address,undefined
endif

cflags_of = $(shell $(PKG_CONFIG) --cflags $(1))
libs_of   = $(shell $(PKG_CONFIG) --libs $(1))

# One group per layer folder (docs/architecture.md); every .c of a folder
# and its subfolders is in the group.
COMMON_SRC  := $(wildcard common/*.c)
PROTO_SRC   := $(wildcard proto/*.c)
CHAN_SRC    := $(wildcard chan/*.c)
MONITOR_SRC := $(filter-out monitor/main.c,$(wildcard monitor/*.c))
# The broker's pieces the tests link (libchidori.a); its main is chidori-broker's.
BROKER_LIB_SRC := broker/provider.c broker/config.c broker/tools.c broker/bundle.c broker/nested.c broker/serve.c
CLI_SRC     := $(filter-out cli/main.c,$(wildcard cli/*.c))
SANDBOX_SRC := $(filter-out sandbox/seccomp-gen.c,$(wildcard sandbox/*.c sandbox/*/*.c))
RUNTIME_SRC := $(wildcard runtime/*.c)
POLICY_SRC  := $(wildcard policy/*.c)
EFFECTS_SRC := $(wildcard effects/*.c effects/*/*.c)
SERVER_SRC  := $(wildcard server/*.c)
ENGINE_SRC  := $(filter-out engine/worker.c,$(wildcard engine/*.c))

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(patsubst %.S,$(BUILD)/obj/%.o,$(1)))

ENGINE_OBJ := $(call obj,$(ENGINE_SRC) engine/embed.S) $(BUILD)/obj/gen/node-parts.o
LIB_OBJ    := $(call obj,$(COMMON_SRC) $(PROTO_SRC) $(CHAN_SRC) $(MONITOR_SRC) $(BROKER_LIB_SRC) $(CLI_SRC) privhelper/deleg.c privhelper/ready.c $(SANDBOX_SRC) $(RUNTIME_SRC) $(POLICY_SRC) $(EFFECTS_SRC) $(SERVER_SRC)) \
              $(ENGINE_OBJ) \
              $(BUILD)/obj/gen/seccomp_bpf.o
CLI_LIBS    = $(call libs_of,$(PKGS_CLI)) -lpthread
HOST_LIBS   = $(call libs_of,$(PKGS_HOST)) -lpthread -ldl
# libcurl and what uses it load on first use (effects/net/net.h, decision 30).
NET_SRC    := effects/net/http.c effects/net/llm.c effects/net/net-api.c
NET_OBJ    := $(call obj,$(NET_SRC))
NET_LIBS    = $(call libs_of,libcurl libcjson)
HOST_OBJ    = $(filter-out $(ENGINE_OBJ) $(NET_OBJ),$(LIB_OBJ))
WORKER_LIBS = $(call libs_of,$(PKGS_WORKER)) -lpthread

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
PROBE_SRC := $(wildcard tests/probes/*.c)
PROBE_BIN := $(patsubst tests/probes/%.c,$(BUILD)/probes/%,$(PROBE_SRC))

# The man pages, made from the built binary's --help (scripts/man-from-help.py),
# so the two never drift.
MAN_PAGES := $(BUILD)/man/chidori.1 $(BUILD)/man/chidori-launch.1 $(BUILD)/man/chidori-serve.1

.PHONY: all deps test test-docs unit asan fuzz fuzz-long soak bench lint install uninstall clean check-deps test-vm FORCE
all: $(BUILD)/chidori $(BUILD)/chidori-launch $(MAN_PAGES) $(BUILD)/chidori-worker $(BUILD)/chidori-broker $(BUILD)/chidori-monitor $(BUILD)/chidori-privhelper $(BUILD)/start-broker $(BUILD)/libchidori-engine.so $(BUILD)/libchidori-net.so $(BUILD)/jsrun $(BUILD)/vfsrun $(UNIT_BIN) $(PROBE_BIN) $(BUILD)/jsc_hello

deps:
	./scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,$(PKGS_CLI)) -c $< -o $@

# common/dlib.c bakes in where libexec is relative to bin: rebuilt when that
# changes (`make install LIBEXECDIR=/usr/lib/chidori` after a plain `make`),
# not for another PREFIX, so an install never rewrites the build tree.
$(BUILD)/dirs.stamp: FORCE
	@mkdir -p $(dir $@)
	@echo '$(LIBEXEC_REL)' | cmp -s - $@ || echo '$(LIBEXEC_REL)' >$@

$(BUILD)/obj/common/dlib.o: common/dlib.c $(BUILD)/dirs.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(DIRS_FLAGS) $(CFLAGS) $(call cflags_of,$(PKGS_CLI)) -c $< -o $@

# The Node/Web surface (engine/node/, docs/api.md): engine/node/*.js and the
# npm packages of tools/package.json (`make deps` installs them from
# tools/package-lock.json) bundled by esbuild into one script per part
# (build/gen/node/*.js), embedded by the generated build/gen/node-parts.S.
NODE_PARTS := $(BUILD)/gen/node-parts.S
$(NODE_PARTS): $(wildcard engine/node/*.js) engine/node/build.mjs tools/package.json tools/package-lock.json
	@mkdir -p $(dir $@)
	@[ -x tools/node_modules/.bin/esbuild ] && [ -f tools/node_modules/.package-lock.json ] && \
	 [ ! tools/package-lock.json -nt tools/node_modules/.package-lock.json ] || \
	 { echo "$@: tools/node_modules is missing or older than tools/package-lock.json: run 'make deps' (it runs npm ci in tools/)" >&2; exit 1; }
	node engine/node/build.mjs $(BUILD)/gen

$(BUILD)/obj/gen/node-parts.o: $(NODE_PARTS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) -c $< -o $@

# The engine's own JavaScript is embedded with its comments and indentation
# taken out (esbuild --minify-whitespace: nothing renamed or dropped): every
# start parses prelude.js, and a smaller text parses faster (make bench).
EMBED_JS := $(patsubst engine/%.js,$(BUILD)/gen/js/%.js,engine/web.js engine/prelude.js engine/fetch.js \
              engine/crypto.js engine/fs.js engine/process.js engine/format.js)
$(BUILD)/gen/js/%.js: engine/%.js tools/package-lock.json
	@mkdir -p $(dir $@)
	@[ -x tools/node_modules/.bin/esbuild ] || \
	 { echo "$@: tools/node_modules/.bin/esbuild is missing: run 'make deps' (it runs npm ci in tools/)" >&2; exit 1; }
	tools/node_modules/.bin/esbuild --minify-whitespace --log-level=warning --charset=utf8 <$< >$@.tmp && mv $@.tmp $@

$(BUILD)/obj/engine/embed.o: engine/embed.S $(EMBED_JS)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -I$(BUILD) $(filter-out -MMD -MP,$(CFLAGS)) -c $< -o $@

# The seccomp filters are compiled once, at build time, by a generator that
# uses the same tables (sandbox/seccomp.c) and the same compiler flags.
$(BUILD)/seccomp-gen: sandbox/seccomp-gen.c sandbox/seccomp.c common/err.c sandbox/seccomp.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $(call cflags_of,libseccomp) sandbox/seccomp-gen.c sandbox/seccomp.c common/err.c -o $@ $(LDFLAGS) $(call libs_of,libseccomp)

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

# chidori links SQLite and libcap statically (not under the sanitizers): two
# libraries fewer for the loader at every start, ~0.6 ms of `chidori launch`
# and `chidori --version` (decision 172); the broker links SQLite as before.
ifeq ($(SAN),1)
LAUNCHER_LIBS = $(HOST_LIBS)
else
LAUNCHER_LIBS = $(call libs_of,libcjson libseccomp) -l:libsqlite3.a -l:libcap.a -lpthread -ldl -lm
endif
$(BUILD)/chidori: $(BUILD)/obj/cli/main.o $(BUILD)/libchidori-host.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LAUNCHER_LIBS)

# chidori-launch is `chidori launch` (cli/main.c dispatches on argv[0]): a link.
$(BUILD)/chidori-launch: $(BUILD)/chidori
	ln -sf chidori $@

MAN_GEN = scripts/man-from-help.py
man_version = $$($(BUILD)/chidori --version | cut -d' ' -f2)
$(BUILD)/man/chidori.1: $(BUILD)/chidori $(MAN_GEN)
	@mkdir -p $(dir $@)
	$(BUILD)/chidori --help >$@.help
	for c in run replay doctor memory; do $(BUILD)/chidori $$c --help >$@.$$c || exit 1; done
	$(MAN_GEN) --name chidori --summary "a sandboxed runtime for JavaScript agents" --version "$(man_version)" \
	  --see-also "chidori-launch(1),chidori-serve(1)" --section "chidori run" $@.run --section "chidori replay" $@.replay \
	  --section "chidori doctor" $@.doctor --section "chidori memory" $@.memory $@.help >$@.tmp
	mv $@.tmp $@

$(BUILD)/man/chidori-launch.1: $(BUILD)/chidori $(BUILD)/chidori-launch $(MAN_GEN)
	@mkdir -p $(dir $@)
	$(BUILD)/chidori-launch --help >$@.help
	$(MAN_GEN) --name chidori-launch --summary "run any program inside chidori's sandbox" --version "$(man_version)" \
	  --see-also "chidori(1),chidori-serve(1)" $@.help >$@.tmp
	mv $@.tmp $@

$(BUILD)/man/chidori-serve.1: $(BUILD)/chidori $(MAN_GEN)
	@mkdir -p $(dir $@)
	$(BUILD)/chidori serve --help >$@.help
	$(MAN_GEN) --name chidori-serve --summary "serve a chidori agent over HTTP: sessions, approvals, streaming" \
	  --version "$(man_version)" --see-also "chidori(1),chidori-launch(1)" $@.help >$@.tmp
	mv $@.tmp $@

$(BUILD)/libchidori-engine.so: $(ENGINE_OBJ) $(call obj,common/err.c $(PROTO_SRC))
	$(CC) -shared -Wl,-Bsymbolic $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

$(BUILD)/libchidori-net.so: $(NET_OBJ) $(call obj,effects/net/http-errors.c effects/net/ssrf.c common/err.c common/util.c common/io.c common/digest.c)
	$(CC) -shared -Wl,-Bsymbolic $(LDFLAGS) -o $@ $^ $(NET_LIBS)

$(BUILD)/chidori-worker: $(BUILD)/obj/engine/worker.o $(ENGINE_OBJ) $(call obj,common/err.c $(PROTO_SRC))
	$(CC) $(LDFLAGS) -o $@ $^ $(WORKER_LIBS)

# The broker (docs/architecture.md): the session engine, the policy, the
# effects (libcurl through libchidori-net.so, dlopened), cJSON and SQLite;
# no JavaScriptCore.  Its stage-2 filter is linked in.
BROKER_CORE_OBJ := $(call obj,broker/lockdown.c $(CHAN_SRC) common/err.c) $(BUILD)/obj/gen/seccomp_bpf.o
BROKER_OBJ := $(BROKER_CORE_OBJ) \
              $(call obj,broker/main.c $(BROKER_LIB_SRC) $(filter-out common/err.c,$(COMMON_SRC)) $(PROTO_SRC) \
                $(RUNTIME_SRC) $(POLICY_SRC) $(filter-out $(NET_SRC),$(EFFECTS_SRC)) $(SERVER_SRC) cli/report.c cli/sink.c cli/bundle.c cli/sourcemap.c sandbox/seccomp-names.c \
                sandbox/tz.c)
BROKER_LIBS = $(call libs_of,libcjson sqlite3) -lpthread -ldl -lm
$(BUILD)/chidori-broker: $(BROKER_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(BROKER_LIBS)

# The monitor (monitor/main.c): what runs with privilege while the agent
# runs — the broker's start, the channel, the boxes.  From an archive, so
# only the objects it uses are linked (scripts/privileged-loc.sh counts
# them); no cJSON, libcurl, SQLite, JavaScriptCore or ICU.
MONITOR_BIN_OBJ := $(call obj,$(MONITOR_SRC) $(CHAN_SRC) $(SANDBOX_SRC) $(COMMON_SRC) runtime/evloop.c \
                     cli/provider.c cli/spawn.c cli/toolbox.c cli/bundlebox.c) $(BUILD)/obj/gen/seccomp_bpf.o
# A static PIE, as the helper: it loads no library at its exec, and the boxes
# and the broker it clones copy a smaller address space (decision 171); the
# sanitizers need the dynamic loader, so `make asan` links it as the others.
ifeq ($(SAN),1)
MONITOR_LIBS = $(call libs_of,libcap) -lpthread
else
MONITOR_LIBS = -static-pie -l:libcap.a -lpthread
endif
$(BUILD)/libchidori-monitor.a: $(MONITOR_BIN_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/chidori-monitor: $(BUILD)/obj/monitor/main.o $(BUILD)/libchidori-monitor.a
	$(CC) $(LDFLAGS) -o $@ $^ $(MONITOR_LIBS)

# The privileged helper (privhelper/): what keeps root under
# CHIDORI_PRIVSEP=1 — the supervisor's user namespace and cgroup, detached
# mounts of the operator's folders, the agent's files.  No cJSON, libcurl,
# SQLite, JavaScriptCore, ICU; scripts/privileged-loc.sh counts it.
PRIVHELPER_OBJ := $(call obj,privhelper/main.c privhelper/deleg.c privhelper/ready.c chan/blob.c common/err.c common/fdpass.c common/util.c common/tmpown.c common/tmpreap.c \
                    sandbox/idmap.c sandbox/cgroup/util.c sandbox/cgroup/kill.c sandbox/cgroup/parse.c monitor/agentfile.c)
# Linked statically (a static PIE): it is exec'd on every run's critical path
# and loading nothing saves ~0.7 ms of its start (docs/decisions.md 164); the
# sanitizers need the dynamic loader, so `make asan` links it as the others.
ifeq ($(SAN),1)
PRIVHELPER_LINK := $(call libs_of,libcap)
else
PRIVHELPER_LINK := -static-pie -l:libcap.a
endif
$(BUILD)/chidori-privhelper: $(PRIVHELPER_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PRIVHELPER_LINK)

# The broker probe plays chidori-broker (its lockdown, HELLO) in the posture tests.
$(BUILD)/probes/broker_probe: tests/probes/broker_probe.c $(BROKER_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $^ -o $@ $(LDFLAGS)

# The supervisor probe plays chidori-monitor under the helper (tests/bats/privsep.bats).
$(BUILD)/probes/supervisor_probe: tests/probes/supervisor_probe.c $(call obj,sandbox/privclient.c common/err.c common/fdpass.c)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $^ -o $@ $(LDFLAGS)

# monitor_start_broker() for the tests (tests/bats/broker.bats).
$(BUILD)/start-broker: tests/helpers/start_broker.c $(BUILD)/libchidori-host.a
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $< -o $@ $(LDFLAGS) $(BUILD)/libchidori-host.a $(HOST_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libchidori.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,$(PKGS_CLI) cmocka) $< -o $@ $(LDFLAGS) $(BUILD)/libchidori.a $(CLI_LIBS) $(call libs_of,cmocka)

# Probes are payloads run inside boxes, not code under test: no sanitizer
# runtime (LeakSanitizer's ptrace at exit is a seccomp kill in the box).
$(BUILD)/probes/%: tests/probes/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -fsanitize=% -fno-sanitize-recover=%,$(CFLAGS)) $< -o $@ \
	      $(filter-out -fsanitize=%,$(LDFLAGS))

$(BUILD)/jsrun: tests/js/jsrun.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,javascriptcoregtk-4.1) $< -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1)

# jsrun with natives over the real effects/fs/vfs.c: the node:fs tests against the parent's tree.
$(BUILD)/vfsrun: tests/js/jsrun.c tests/js/vfsrun.c effects/fs/vfs.c common/text.c common/util.c common/io.c common/digest.c common/err.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(filter-out -MMD -MP,$(CFLAGS)) $(call cflags_of,javascriptcoregtk-4.1 libcjson) $^ -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1 libcjson)

$(BUILD)/jsc_hello: tests/bench/jsc_hello.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(call cflags_of,javascriptcoregtk-4.1) $< -o $@ $(LDFLAGS) $(call libs_of,javascriptcoregtk-4.1)

# Builds (installing missing Debian packages first) and runs every suite.
# The libFuzzer targets (docs/fuzzing.md): the first five build from their few
# sources; the later ones link an archive of the parent's code built with
# clang's fuzzer instrumentation (only the objects a target calls are linked).
FUZZ_NEW := fuzz_url fuzz_template fuzz_workspace fuzz_journal fuzz_tools fuzz_serve
FUZZ_BIN := $(BUILD)/fuzz_frame $(BUILD)/fuzz_policy $(BUILD)/fuzz_vfs $(BUILD)/fuzz_json $(BUILD)/fuzz_chan \
            $(addprefix $(BUILD)/,$(FUZZ_NEW))

test: check-deps all $(FUZZ_BIN)
	BUILD=$(BUILD) ./scripts/run-tests.sh

# Every code block of README.md and docs/*.md against the built binary
# (docs/README.md says how a block runs); `make test` runs it too.
test-docs: all
	tests/docs/run-docs.py --build $(BUILD)

# cgroup v2 and a second kernel (6.1) in a qemu guest; `make test` runs it too
# when qemu is installed (scripts/deps.sh installs it).
test-vm: all
	tests/vm/setup.sh && tests/vm/run.sh tests/vm/guest-run.sh

check-deps:
	@./scripts/deps.sh >/dev/null

asan:
	$(MAKE) BUILD=build-asan CC=clang SAN=1 OPTFLAGS="-O1 -g" test

# Every target for FUZZ_SECONDS (default 60) each on a copy of its corpus.
fuzz: $(FUZZ_BIN)
	./scripts/fuzz.sh $(FUZZ_BIN)

# Every target in turn for FUZZ_SECONDS each, from the committed corpora, new
# inputs merged back into them (scripts/fuzz.sh --long; docs/fuzzing.md).
# Undefined behaviour stops the target (a finding), as a memory error does.
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_SECONDS ?= 300
fuzz-long: $(FUZZ_BIN)
	FUZZ_SECONDS=$(FUZZ_SECONDS) ./scripts/fuzz.sh --long $(FUZZ_BIN)

FUZZ_CFLAGS := -std=gnu11 -g -O1 -I. $(DIRS_FLAGS) -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
               $(call cflags_of,$(PKGS_HOST) libcurl libpq)
FUZZ_LIB_SRC := $(COMMON_SRC) $(PROTO_SRC) $(POLICY_SRC) $(RUNTIME_SRC) $(EFFECTS_SRC) \
                $(filter-out server/http.c server/mhd.c,$(SERVER_SRC))
FUZZ_LIB_OBJ := $(patsubst %.c,$(BUILD)/fuzz-obj/%.o,$(FUZZ_LIB_SRC))
$(BUILD)/fuzz-obj/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libchidori-fuzz.a: $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(addprefix $(BUILD)/,$(FUZZ_NEW)): $(BUILD)/%: tests/fuzz/%.c $(BUILD)/libchidori-fuzz.a
	clang $(filter-out -fsanitize=fuzzer-no-link%,$(FUZZ_CFLAGS)) $(WARN) $(FUZZ_SAN) -MMD -MP \
	      -MF $(BUILD)/fuzz-obj/$*.d $< -o $@ $(FUZZ_LDFLAGS_$*) $(BUILD)/libchidori-fuzz.a $(HOST_LIBS) $(call libs_of,libcurl) -lm

# serve's requests without libmicrohttpd: the harness is server/http.c; the
# SSE stream and a replay's run (a connection, a box) are answered by stubs.
FUZZ_LDFLAGS_fuzz_serve := -Wl,--wrap=events_stream -Wl,--wrap=replay_route

JSON_SRC := proto/json.c proto/json-span.c proto/json-text.c proto/json-cjson.c

$(BUILD)/fuzz_frame: tests/fuzz/fuzz_frame.c proto/proto.c $(JSON_SRC) common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. $(FUZZ_SAN) $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson) -lm

$(BUILD)/fuzz_json: tests/fuzz/fuzz_json.c $(JSON_SRC)
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. $(FUZZ_SAN) $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson) -lm

$(BUILD)/fuzz_policy: tests/fuzz/fuzz_policy.c policy/policy.c $(JSON_SRC) common/text.c common/util.c common/io.c common/digest.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. $(FUZZ_SAN) $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson) -lm

$(BUILD)/fuzz_vfs: tests/fuzz/fuzz_vfs.c effects/fs/vfs.c common/text.c common/util.c common/io.c common/digest.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. $(FUZZ_SAN) $(call cflags_of,libcjson) $^ -o $@ $(call libs_of,libcjson)

# The monitor's channel decoder: what a compromised broker sends (chan/).
$(BUILD)/fuzz_chan: tests/fuzz/fuzz_chan.c chan/chan.c chan/blob.c common/err.c
	@mkdir -p $(dir $@)
	clang -std=gnu11 -g -O1 -I. $(FUZZ_SAN) $^ -o $@

bench: all
	BUILD=$(BUILD) ./scripts/bench.sh

# SOAK_RUNS (default 10000) runs of a mixed corpus through `chidori run` and one
# `chidori serve`, SOAK_JOBS (default 2) at once; fails when a sampled metric
# (RSS, fds, processes, cgroups, temp files, state) grows: docs/soak.md.
# The report is build/soak/report.md and build/soak/samples.png. Not in `make test`.
soak: all
	CHIDORI_BIN=$(CURDIR)/$(BUILD)/chidori SOAK_OUT=$(CURDIR)/$(BUILD)/soak tests/soak/soak.py

lint:
	./scripts/lint.sh

# DESTDIR stages the tree (packaging); the binary finds its worker and
# libraries relative to itself, so the staged tree runs where it is too.
# esbuild (from `make deps`) is copied beside the worker when present.
ESBUILD_SRC := tools/node_modules/.bin/esbuild
INSTALL_FILES := $(BINDIR)/chidori $(LIBEXECDIR)/chidori-worker $(LIBEXECDIR)/chidori-broker $(LIBEXECDIR)/chidori-monitor $(LIBEXECDIR)/chidori-privhelper \
                 $(LIBEXECDIR)/libchidori-engine.so \
                 $(LIBEXECDIR)/libchidori-net.so $(LIBEXECDIR)/esbuild \
                 $(DATADIR)/bash-completion/completions/chidori $(DATADIR)/zsh/site-functions/_chidori \
                 $(BINDIR)/chidori-launch $(patsubst $(BUILD)/man/%,$(DATADIR)/man/man1/%,$(MAN_PAGES))

install: $(BUILD)/chidori $(BUILD)/chidori-launch $(MAN_PAGES) $(BUILD)/chidori-worker $(BUILD)/chidori-broker $(BUILD)/chidori-monitor $(BUILD)/chidori-privhelper $(BUILD)/chidori-broker $(BUILD)/start-broker $(BUILD)/libchidori-engine.so $(BUILD)/libchidori-net.so
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR) $(DESTDIR)$(DATADIR)/bash-completion/completions \
		$(DESTDIR)$(DATADIR)/zsh/site-functions $(DESTDIR)$(DATADIR)/man/man1
	install -m 0755 $(BUILD)/chidori $(DESTDIR)$(BINDIR)/chidori
	ln -sf chidori $(DESTDIR)$(BINDIR)/chidori-launch
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(DATADIR)/man/man1/
	install -m 0755 $(BUILD)/chidori-worker $(DESTDIR)$(LIBEXECDIR)/chidori-worker
	install -m 0755 $(BUILD)/chidori-broker $(DESTDIR)$(LIBEXECDIR)/chidori-broker
	install -m 0755 $(BUILD)/chidori-monitor $(DESTDIR)$(LIBEXECDIR)/chidori-monitor
	install -m 0755 $(BUILD)/chidori-privhelper $(DESTDIR)$(LIBEXECDIR)/chidori-privhelper
	install -m 0755 $(BUILD)/libchidori-engine.so $(DESTDIR)$(LIBEXECDIR)/libchidori-engine.so
	install -m 0755 $(BUILD)/libchidori-net.so $(DESTDIR)$(LIBEXECDIR)/libchidori-net.so
	@if [ -x $(ESBUILD_SRC) ]; then \
		echo "install -m 0755 $(ESBUILD_SRC) $(DESTDIR)$(LIBEXECDIR)/esbuild"; \
		install -m 0755 $(ESBUILD_SRC) $(DESTDIR)$(LIBEXECDIR)/esbuild; \
	else \
		echo "install: no esbuild in tools/ ('make deps' fetches it): ES-module and TypeScript agents will" \
		     "need esbuild on PATH or CHIDORI_ESBUILD; 'chidori doctor' says which one it finds"; \
	fi
	install -m 0644 completions/chidori.bash $(DESTDIR)$(DATADIR)/bash-completion/completions/chidori
	install -m 0644 completions/chidori.zsh $(DESTDIR)$(DATADIR)/zsh/site-functions/_chidori

# Removes exactly the files install puts and chidori's own libexec
# directory; the shared ones (bin, share/...) stay, as other packages use them.
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALL_FILES))
	if [ -d $(DESTDIR)$(LIBEXECDIR) ]; then rmdir --ignore-fail-on-non-empty $(DESTDIR)$(LIBEXECDIR); fi

clean:
	rm -rf build build-asan

-include $(shell find $(BUILD)/obj $(BUILD)/fuzz-obj -name '*.d' 2>/dev/null)
