"""Every topic's summary, computed once per version of the store and shared by the requests.

The store changes only when the stream job commits a micro-batch, so ``GET /topics`` (and the
per-topic metrics) between two batches reuse one :class:`~routewatch.store.views.TopicIndex`,
built by SQL aggregation; only the routes of the topics on a page are read, and a page is kept
rendered as JSON for the requests that ask for it again in the same version (the pages asked
for last are kept, up to ``MAX_PAGE_TOPICS`` topics).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from api.models import TopicsPublic
from routewatch.store import Store
from routewatch.store.views import StoreVersion, TopicIndex, store_version, topic_index

__all__ = ["MAX_PAGE_TOPICS", "PageKey", "RenderedPage", "TopicCache"]

# Topics on the pages kept per version (an empty page counts as one): a few tens of MB at most,
# and room for the pages that dashboards poll.
MAX_PAGE_TOPICS = 5_000
PageKey = tuple[Any, ...]  # what determines a page: its filters, cursor and limit


@dataclass(frozen=True)
class RenderedPage:
    """A page of ``GET /topics`` as the API sends it."""

    body: bytes  # JSON
    topics: int  # on the page

    @classmethod
    def of(cls, page: TopicsPublic) -> RenderedPage:
        return cls(page.model_dump_json().encode(), len(page.data))


@dataclass
class _Version:
    index: TopicIndex
    pages: OrderedDict[PageKey, RenderedPage] = field(default_factory=OrderedDict)
    topics: int = 0  # on the pages kept

    def keep(self, key: PageKey, page: RenderedPage) -> None:
        """Keep ``page``, dropping the least recently asked for beyond ``MAX_PAGE_TOPICS``."""
        if key not in self.pages:
            self.pages[key] = page
            self.topics += _weight(page)
        while self.topics > MAX_PAGE_TOPICS and len(self.pages) > 1:
            _, dropped = self.pages.popitem(last=False)
            self.topics -= _weight(dropped)


def _weight(page: RenderedPage) -> int:
    return max(1, page.topics)


class TopicCache:
    """The topic indexes of the last ``keep`` store versions asked for, with the pages made
    from each. Thread-safe: requests run on worker threads.

    An index is built holding the lock, so that the requests that see a new batch at once wait
    for one build instead of each making its own. Two versions are kept by default, so that a
    request still reading the previous version (its snapshot began before the batch) does not
    evict the new one.
    """

    def __init__(self, keep: int = 2) -> None:
        self._keep = keep
        self._lock = threading.Lock()
        self._versions: OrderedDict[StoreVersion, _Version] = OrderedDict()
        self.builds = 0  # indexes built so far (the tests count them)

    def get(self, store: Store) -> TopicIndex:
        """The index of the store's current version. Call it inside
        :meth:`~routewatch.store.Store.snapshot`, so that the version read and the index built
        are those of one version, and later reads in the snapshot agree with it."""
        return self._current(store).index

    def page(
        self, store: Store, key: PageKey, make: Callable[[TopicIndex], TopicsPublic]
    ) -> RenderedPage:
        """The page ``key`` of the store's current version: made by ``make`` (inside the same
        snapshot, as :meth:`get`) and rendered the first time it is asked for, then kept with
        the version."""
        version = self._current(store)
        with self._lock:
            page = version.pages.get(key)
            if page is not None:
                version.pages.move_to_end(key)
                return page
        # outside the lock: a page is quick, and may be made twice
        page = RenderedPage.of(make(version.index))
        with self._lock:
            version.keep(key, page)
        return page

    def _current(self, store: Store) -> _Version:
        version = store_version(store)
        with self._lock:
            found = self._versions.get(version)
            if found is not None:
                self._versions.move_to_end(version)
                return found
            found = self._versions[version] = _Version(topic_index(store, version))
            self.builds += 1
            while len(self._versions) > self._keep:
                self._versions.popitem(last=False)
            return found
