// A TypeScript agent with memory: counts its runs across invocations.
interface Input { step?: number }
export default async function main(input: Input | null): Promise<{ runs: number }> {
  const step = input?.step ?? 1;
  const runs: number = ((await chidori.memory.get("runs")) ?? 0) + step;
  await chidori.memory.set("runs", runs);
  await chidori.checkpoint("counted");
  return { runs };
}
declare const chidori: any;
