"""Credentials of a lab: a CA, the API server's serving certificate, the service-account signing key
and one bearer token per identity.

The lab runs with real authentication and RBAC, so that what a component may do is decided by the API
server exactly as in a cluster. Bearer tokens (a static token file) keep identities cheap: a thousand
nodes get a thousand `system:node:<name>` users without a thousand certificates.
"""

from __future__ import annotations

import datetime
import functools
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True, slots=True)
class Identity:
    """A user of the lab's API server: its bearer token, name and groups."""

    token: str
    user: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PkiPaths:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    sa_public: Path
    sa_private: Path
    tokens: Path
    # The API server's client certificate towards real nodes' kubelets (logs, exec).
    kubelet_client_cert: Path
    kubelet_client_key: Path

    @staticmethod
    def in_folder(folder: Path) -> PkiPaths:
        """Where `create_pki` writes each file in folder."""
        return PkiPaths(
            ca_cert=folder / "ca.crt",
            serving_cert=folder / "apiserver.crt",
            serving_key=folder / "apiserver.key",
            sa_public=folder / "sa.pub",
            sa_private=folder / "sa.key",
            tokens=folder / "tokens.csv",
            kubelet_client_cert=folder / "kubelet-client.crt",
            kubelet_client_key=folder / "kubelet-client.key",
        )


def write_private(path: Path, data: bytes) -> None:
    """Write a secret readable by its owner only, from the first byte on."""
    path.unlink(missing_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(
    common_name: str,
    usage: x509.ObjectIdentifier,
    *,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    valid: tuple[datetime.datetime, datetime.datetime],
    names: list[x509.GeneralName] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new key and its certificate for `usage` (server or client), signed by the lab's CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
    )
    if names is not None:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    builder = builder.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    write_private(
        path,
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        ),
    )


def create_pki(
    folder: Path, identities: list[Identity], *, server_addresses: tuple[str, ...] = ()
) -> PkiPaths:
    """Write a fresh CA, serving certificate, service-account key pair and token file into folder.

    The API server's certificate names loopback, the `kubernetes` Service and `server_addresses`
    (real nodes' addresses, where their pods reach it through the node's link)."""
    folder.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC)
    valid = (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=365))
    ca_cert, ca_key = _new_ca(valid)
    issue = functools.partial(_issue, ca_cert=ca_cert, ca_key=ca_key, valid=valid)
    serving_cert, serving_key = issue(
        "kube-apiserver", x509.OID_SERVER_AUTH, names=_serving_names(server_addresses)
    )
    kubelet_client_cert, kubelet_client_key = issue(
        "kube-apiserver-kubelet-client", x509.OID_CLIENT_AUTH
    )

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    paths = PkiPaths.in_folder(folder)
    _write_certificate(paths.ca_cert, ca_cert)
    _write_certificate(paths.serving_cert, serving_cert)
    _write_key(paths.serving_key, serving_key)
    _write_certificate(paths.kubelet_client_cert, kubelet_client_cert)
    _write_key(paths.kubelet_client_key, kubelet_client_key)
    paths.sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    _write_key(paths.sa_private, sa_key)
    _write_tokens(paths.tokens, identities)
    return paths


def _new_ca(
    valid: tuple[datetime.datetime, datetime.datetime],
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """The lab's CA: a new key and its self-signed certificate, signing certificates only."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("edgerollout-lab-ca"))
        .issuer_name(_name("edgerollout-lab-ca"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid[0])
        .not_valid_after(valid[1])
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(ca_key, hashes.SHA256())
    )
    return ca_cert, ca_key


def _serving_names(server_addresses: tuple[str, ...]) -> list[x509.GeneralName]:
    """The names the API server is reached by: loopback, the `kubernetes` Service, and
    `server_addresses`."""
    return [
        x509.DNSName("localhost"),
        x509.DNSName("kubernetes"),
        x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"),
        x509.DNSName("kubernetes.default.svc.cluster.local"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address("10.96.0.1")),
        *(x509.IPAddress(ipaddress.ip_address(address)) for address in server_addresses),
    ]


def _write_certificate(path: Path, certificate: x509.Certificate) -> None:
    path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))


def _write_tokens(path: Path, identities: list[Identity]) -> None:
    """The API server's static token file: one line per identity, readable by its owner only."""
    lines = []
    for index, identity in enumerate(identities):
        groups = ",".join(identity.groups)
        lines.append(f'{identity.token},{identity.user},uid-{index},"{groups}"')
    write_private(path, ("\n".join(lines) + "\n").encode())


def new_identity(user: str, *groups: str) -> Identity:
    return Identity(token=secrets.token_hex(24), user=user, groups=groups)
