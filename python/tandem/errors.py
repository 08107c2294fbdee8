"""Tandem's exceptions: one class, TandemError, for every failure a call can have, with two
subclasses that also derive from the matching built-in (ValueError, NotImplementedError) so that
callers may catch either."""

from __future__ import annotations

__all__ = [
    "TandemError",
    "InvalidArgument",
    "NotSupported",
    "ServerCode",
    "ClientCode",
]


class ServerCode:
    """The server's error codes (tandem.proto ErrorCode, ``enum tdm_server_code``)."""

    UNSPECIFIED = 0
    BAD_REQUEST = 1
    UNSUPPORTED_VERSION = 2
    UNAUTHENTICATED = 3
    LIMIT = 4
    NON_FINITE = 5
    BAD_INDEX = 6
    NOT_UNIT = 7
    EMPTY = 8
    UNKNOWN_MESH = 9
    UNKNOWN_SCENE = 10
    MESH_IN_USE = 11
    NO_MEMORY = 12
    STORAGE = 13
    BUSY = 14
    INTERNAL = 15
    UNKNOWN_ROBOT = 16  # a libtandem and tandemd with robot support
    ROBOT_IN_USE = 17
    BAD_ROBOT = 18
    WORK_BUDGET = 19


class ClientCode:
    """libtandem's own codes (``enum tdm_client_err``); 0 when the failure was found in Python."""

    OK = 0
    EINVAL = -100
    ENOMEM = -101
    EADDR = -102
    ECONNECT = -103
    ETIMEOUT = -104
    EIO = -105
    ECLOSED = -106
    EPROTO = -107
    ELIMIT = -108
    ESERVER = -109
    EVERSION = -110
    ENOBUFS = -111
    ECANCELED = -112


# the names tdm_server_code_name gives (client/util.c)
_SERVER_NAMES = {
    v: ("non-finite" if k == "NON_FINITE" else k.lower().replace("_", " "))
    for k, v in vars(ServerCode).items()
    if not k.startswith("_")
}


class TandemError(Exception):
    """A Tandem call failed.

    Attributes:
        code: the server's error code (ServerCode) when the server refused the request, or the code
            the server would have sent for an argument refused before sending; 0 otherwise.
        code_name: its lower-case name ("unknown scene", "non-finite"...), "" when code is 0.
        client_code: libtandem's code (ClientCode): ESERVER when the server refused, a connection
            or local code (ECONNECT, ETIMEOUT, ECLOSED, ELIMIT...), 0 when Python refused an argument.
        message: one line for a person.
        field: the offending field ("poses", "vertices", "objects"...), "" when none.
        index: the offending element of that field (a query, vertex, triangle or object), or -1.
    """

    def __init__(
        self,
        message: str,
        *,
        code: int = 0,
        client_code: int = 0,
        field: str = "",
        index: int = -1,
    ):
        self.message = message
        self.code = code
        self.code_name = _SERVER_NAMES.get(code, f"code {code}") if code else ""
        self.client_code = client_code
        self.field = field
        self.index = index
        super().__init__(self._text())

    def _text(self) -> str:
        where = ""
        if self.field:
            where = f" [{self.field}" + (f" {self.index}" if self.index >= 0 else "") + "]"
        kind = f"{self.code_name}: " if self.code_name else ""
        return f"{kind}{self.message}{where}"

    @property
    def from_server(self) -> bool:
        """True when the server answered with an Error (the connection stays usable)."""
        return self.client_code == ClientCode.ESERVER

    def __reduce__(self):  # keeps the attributes across pickling (multiprocessing)
        return (
            _rebuild,
            (type(self), self.message, self.code, self.client_code, self.field, self.index),
        )


def _rebuild(cls, message, code, client_code, field, index):
    return cls(message, code=code, client_code=client_code, field=field, index=index)


class InvalidArgument(TandemError, ValueError):
    """An argument was refused in Python, before anything was sent: a wrong shape or dtype, a NaN,
    a quaternion that is not unit, an index out of range. ``code``, ``field`` and ``index`` are
    those the server would have answered with."""


class NotSupported(TandemError, NotImplementedError):
    """The loaded libtandem (or server) lacks a feature, e.g. robot support."""


def server_error(message: str, code: int, field: str, index: int) -> TandemError:
    return TandemError(message, code=code, client_code=ClientCode.ESERVER, field=field, index=index)


def invalid(message: str, *, code: int = ServerCode.BAD_REQUEST, field: str = "", index: int = -1) -> InvalidArgument:
    return InvalidArgument(message, code=code, client_code=0, field=field, index=index)


def not_supported(message: str) -> NotSupported:
    return NotSupported(message, client_code=ClientCode.EINVAL)
