/** One page of a list, and the way to the next. Iterating it yields its items, then the next pages'. */
export class Page<T> implements AsyncIterable<T> {
  constructor(
    readonly data: T[],
    readonly hasMore: boolean,
    readonly nextCursor: string | null,
    private readonly fetchPage: (cursor: string) => Promise<Page<T>>,
  ) {}

  hasNextPage(): boolean {
    return this.hasMore && this.nextCursor !== null;
  }

  /** The next page, or null after the last one. */
  async nextPage(): Promise<Page<T> | null> {
    return this.hasMore && this.nextCursor !== null ? this.fetchPage(this.nextCursor) : null;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* this.data;
    let page = await this.nextPage();
    while (page !== null) {
      yield* page.data;
      page = await page.nextPage();
    }
  }
}

/**
 * What a `list` method returns: await it for the first page (`.data`, `.hasMore`, `.nextCursor`),
 * or `for await` over it for every item across pages. The request starts on first use.
 */
export class PagePromise<T> implements PromiseLike<Page<T>>, AsyncIterable<T> {
  private started: Promise<Page<T>> | undefined;

  constructor(private readonly load: () => Promise<Page<T>>) {}

  private page(): Promise<Page<T>> {
    this.started ??= this.load();
    return this.started;
  }

  then<R1 = Page<T>, R2 = never>(
    onFulfilled?: ((page: Page<T>) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.page().then(onFulfilled, onRejected);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    yield* await this.page();
  }
}
