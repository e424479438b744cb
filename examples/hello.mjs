// The same agent as an ES module (bundled by esbuild before launch).
export default async function main(input) {
  const name = input?.name ?? "world";
  return { greeting: await chidori.template("Hello, {{name}}!", { name }) };
}
