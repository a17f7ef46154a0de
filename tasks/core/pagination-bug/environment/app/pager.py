"""Pagination helpers used by the catalogue web pages."""
import math


class PageError(ValueError):
    """Raised for a page number outside 1..page_count."""


def page_count(total, per_page):
    """Number of pages needed to show `total` items, `per_page` per page.

    An empty collection still has one (empty) page. `per_page` must be >= 1.
    """
    if per_page < 1:
        raise ValueError("per_page must be >= 1")
    return max(1, math.floor(total / per_page) + 1)


def paginate(items, page, per_page):
    """Return the items shown on 1-based `page`.

    Every page holds exactly `per_page` items except the last, which holds the rest.
    Raises PageError when page < 1 or page > page_count(len(items), per_page).
    """
    pages = page_count(len(items), per_page)
    if page < 1 or page > pages:
        raise PageError(f"page {page} out of range 1..{pages}")
    start = (page - 1) * per_page + 1
    return items[start:start + per_page - 1]


def page_window(page, pages, width=5):
    """Page numbers to show in the navigation bar: up to `width` consecutive numbers
    containing `page`, centred on it when possible, never below 1 or above `pages`.

    For an even width the extra number goes after `page` (width 4 around 5 -> 4,5,6,7).
    """
    half = width // 2
    first = max(1, page - half)
    last = min(pages, first + width)
    first = max(1, last - width)
    return list(range(first, last))
