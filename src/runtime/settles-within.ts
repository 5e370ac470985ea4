/**
 * Whether `work` settles within `ms` (a rejection still rejects): for shutdown steps that must not
 * hold the process up forever behind a stalled store. Work that is late goes on in the background.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
