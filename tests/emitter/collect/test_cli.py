"""``routewatch collect``'s command line: NameServer lists and the sentence for a bad one."""

from __future__ import annotations

import pytest

from emitter.collect.cli import namesrv_list
from routewatch.errors import RoutewatchError


def test_a_namesrv_list_as_clients_write_it() -> None:
    assert namesrv_list("10.0.0.1:9876; 10.0.0.2:9876;") == ["10.0.0.1:9876", "10.0.0.2:9876"]


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("", "no NameServer to watch: give --namesrv"),
        ("10.0.0.1", "'10.0.0.1' is not a NameServer address: write each as host:port"),
        ("10.0.0.1:99999", "'10.0.0.1:99999' is not a NameServer address"),
        ("a:1;a:1", "names a NameServer twice"),
    ],
)
def test_a_bad_namesrv_list_is_one_sentence(text: str, sentence: str) -> None:
    with pytest.raises(RoutewatchError, match=sentence):
        namesrv_list(text)
