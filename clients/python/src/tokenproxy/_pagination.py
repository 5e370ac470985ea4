from typing import Callable, Generic, Iterator, List, Optional, TypeVar

T = TypeVar("T")


class Page(Generic[T]):
    """One page of a list. Iterating it yields its items, then those of the following pages."""

    def __init__(
        self,
        data: List[T],
        has_more: bool,
        next_cursor: Optional[str],
        fetch_page: Callable[[str], "Page[T]"],
    ) -> None:
        self.data = data
        self.has_more = has_more
        self.next_cursor = next_cursor
        self._fetch_page = fetch_page

    def has_next_page(self) -> bool:
        return self.has_more and self.next_cursor is not None

    def next_page(self) -> "Optional[Page[T]]":
        """The next page, or None after the last one."""
        if self.has_more and self.next_cursor is not None:
            return self._fetch_page(self.next_cursor)
        return None

    def __iter__(self) -> Iterator[T]:
        page: Optional[Page[T]] = self
        while page is not None:
            yield from page.data
            page = page.next_page()

    def __repr__(self) -> str:
        return f"Page(len(data)={len(self.data)}, has_more={self.has_more})"
