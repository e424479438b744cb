// The agent `chidori serve` runs for every session (docs/kubernetes.md):
// replace this file with yours; kustomize puts it in the ConfigMap chidori-agent.
async function main(input) {
  const name = (input && input.name) || "world";
  return { greeting: await chidori.template("Hello, {{name}}!", { name }) };
}
