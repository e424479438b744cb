#!/usr/bin/env bats
# chidori run --quotas FILE (issue 19 item 2): the "session" part of serve's
# quotas file bounds one run; a call over a quota fails with EQUOTA, the run
# goes on, and the run's report (stderr, --json stats.usage) shows the use.
# Each limit is shown refusing and, without the file, the same agent going through.

load helpers

memory_agent() {
  agent a.js <<'JS'
export default async () => {
  const out = [];
  for (let i = 0; i < 4; i++) {
    try { out.push(await chidori.memory.get("k" + i)); }
    catch (e) { out.push({ code: e.code, message: e.message }); }
  }
  return out;
};
JS
}

@test "run --quotas: effects over the session's limit fail with EQUOTA; the report and --json show the use; without it all pass" {
  memory_agent
  echo '{"session": {"effects": 2}}' >"$T/q.json"
  chid run --quiet --quotas "$T/q.json" "$T/a.js"
  assert_status 0
  [[ $(jq -c '[.[] | if type == "object" then .code else . end]' <<<"$output") == '[null,null,"EQUOTA","EQUOTA"]' ]] || { echo "$output"; false; }
  [[ $(jq -r '.[2].message' <<<"$output") == *"session quota exceeded: effects limit 2, used 2"* ]] || { echo "$output"; false; }
  assert_stderr_has "chidori: quotas: effects 2/2"
  chid run --quiet --json --quotas "$T/q.json" "$T/a.js"
  assert_status 0
  [[ $(jq -c '.stats.usage.effects' <<<"$output") == '{"used":2,"limit":2}' ]] || { echo "$output"; false; }
  [[ $(jq -r '.stats.usage.wall_ms.used >= 0 and .stats.usage.wall_ms.limit == null' <<<"$output") == true ]] || { echo "$output"; false; }
  # The same through CHIDORI_QUOTAS, and in the one-process parent.
  CHIDORI_QUOTAS="$T/q.json" CHIDORI_RUN_BROKER=0 chid run --quiet "$T/a.js"
  assert_status 0
  [[ $(jq -r '.[3].code' <<<"$output") == EQUOTA ]] || { echo "$output"; false; }
  assert_stderr_has "chidori: quotas: effects 2/2"
  # The control: no quotas, every call passes and no usage is reported.
  chid run --quiet --json "$T/a.js"
  assert_status 0
  [[ $(jq -c '.value' <<<"$output") == '[null,null,null,null]' ]] || { echo "$output"; false; }
  [[ $(jq -c '.stats.usage' <<<"$output") == null ]] || { echo "$output"; false; }
}

@test "run --quotas: wall_ms is the run's deadline (exit 124); without it the agent finishes" {
  agent a.js <<'JS'
export default async () => { await new Promise((r) => setTimeout(r, 3000)); return "slept"; };
JS
  echo '{"session": {"wall_ms": 500}}' >"$T/q.json"
  chid run --quiet --quotas "$T/q.json" "$T/a.js"
  assert_status 124
  assert_stderr_has "deadline"
  chid run --quiet "$T/a.js"
  assert_status 0
  [[ $output == '"slept"' ]]
}

@test "run --quotas: a malformed file, one without a \"session\" part, or a missing one is a usage error naming it; tenant budgets beside it are said not to apply" {
  memory_agent
  echo '{"session": {"effects": 0}}' >"$T/q.json"
  chid run --quotas "$T/q.json" "$T/a.js"
  assert_status 2
  assert_stderr_has "--quotas $T/q.json: session: quota 'effects' must be an integer from 1 to 2^53"
  echo '{"tenant": {"effects": 1}, "window_s": 60}' >"$T/q.json"
  chid run --quotas "$T/q.json" "$T/a.js"
  assert_status 2
  assert_stderr_has "--quotas $T/q.json: no \"session\" quotas; a run applies only the file's \"session\" part"
  CHIDORI_QUOTAS="$T/none.json" chid run "$T/a.js"
  assert_status 2
  assert_stderr_has "--quotas cannot open $T/none.json"
  echo '{"session": {"effects": 3}, "tenant": {"effects": 1}}' >"$T/q.json"
  chid run --quotas "$T/q.json" "$T/a.js"
  assert_status 0
  assert_stderr_has "--quotas $T/q.json: its tenant budgets do not apply to a run (only \"session\")"
  [[ $(jq -r '.[3].code' <<<"$output") == EQUOTA ]] || { echo "$output"; false; }
  chid run --help
  [[ $output == *"--quotas FILE"* && $output == *"CHIDORI_QUOTAS"* ]]
}
