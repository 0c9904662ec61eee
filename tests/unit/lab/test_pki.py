"""The lab's credentials: a CA, the API server's serving certificate, service-account keys, tokens."""

from __future__ import annotations

import csv
import ipaddress
import stat
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from edgerollout_lab.pki import Identity, PkiPaths, create_pki, new_identity

IDENTITIES = [
    Identity(token="t-admin", user="lab-admin", groups=("system:masters",)),
    Identity(token="t-kcm", user="system:kube-controller-manager"),
    Identity(token="t-node", user="system:node:edge-1", groups=("system:nodes", "lab:edge")),
]


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PkiPaths:
    return create_pki(tmp_path_factory.mktemp("lab") / "pki", IDENTITIES)


def certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_create_pki_writes_every_file_into_the_folder(pki: PkiPaths) -> None:
    folder = pki.ca_cert.parent
    assert folder.name == "pki"
    assert sorted(path.name for path in folder.iterdir()) == [
        "apiserver.crt",
        "apiserver.key",
        "ca.crt",
        "kubelet-client.crt",
        "kubelet-client.key",
        "sa.key",
        "sa.pub",
        "tokens.csv",
    ]
    assert pki == PkiPaths(
        ca_cert=folder / "ca.crt",
        serving_cert=folder / "apiserver.crt",
        serving_key=folder / "apiserver.key",
        sa_public=folder / "sa.pub",
        sa_private=folder / "sa.key",
        tokens=folder / "tokens.csv",
        kubelet_client_cert=folder / "kubelet-client.crt",
        kubelet_client_key=folder / "kubelet-client.key",
    )


def test_ca_is_a_self_signed_certificate_authority(pki: PkiPaths) -> None:
    ca = certificate(pki.ca_cert)

    ca.verify_directly_issued_by(ca)
    constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca is True
    assert ca.extensions.get_extension_for_class(x509.KeyUsage).value.key_cert_sign is True


def test_serving_certificate_is_issued_by_the_lab_ca(pki: PkiPaths) -> None:
    ca, serving = certificate(pki.ca_cert), certificate(pki.serving_cert)

    serving.verify_directly_issued_by(ca)
    assert serving.issuer == ca.subject
    assert serving.subject != ca.subject
    usage = serving.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.OID_SERVER_AUTH]


def test_serving_certificate_names_loopback_localhost_and_the_kubernetes_service(
    pki: PkiPaths,
) -> None:
    names = (
        certificate(pki.serving_cert)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )

    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("10.96.0.1"),
    ]
    assert names.get_values_for_type(x509.DNSName) == [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]


def test_serving_certificate_names_the_real_nodes_addresses_given(tmp_path: Path) -> None:
    pki = create_pki(tmp_path / "pki", IDENTITIES, server_addresses=("10.254.99.1", "10.254.99.2"))
    names = (
        certificate(pki.serving_cert)
        .extensions.get_extension_for_class(x509.SubjectAlternativeName)
        .value
    )

    assert names.get_values_for_type(x509.IPAddress)[2:] == [
        ipaddress.ip_address("10.254.99.1"),
        ipaddress.ip_address("10.254.99.2"),
    ]


def test_the_kubelet_client_certificate_is_a_client_of_the_lab_ca(pki: PkiPaths) -> None:
    ca, client = certificate(pki.ca_cert), certificate(pki.kubelet_client_cert)
    key = serialization.load_pem_private_key(pki.kubelet_client_key.read_bytes(), password=None)

    client.verify_directly_issued_by(ca)
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [x509.OID_CLIENT_AUTH]
    assert client.public_key() == key.public_key()
    assert pki.kubelet_client_key.stat().st_mode & 0o777 == 0o600


def test_serving_key_belongs_to_the_serving_certificate(pki: PkiPaths) -> None:
    key = serialization.load_pem_private_key(pki.serving_key.read_bytes(), password=None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)

    cert_key = certificate(pki.serving_cert).public_key()
    assert isinstance(cert_key, ec.EllipticCurvePublicKey)
    assert key.public_key().public_numbers() == cert_key.public_numbers()


def test_service_account_keys_are_one_rsa_pair(pki: PkiPaths) -> None:
    private = serialization.load_pem_private_key(pki.sa_private.read_bytes(), password=None)
    public = serialization.load_pem_public_key(pki.sa_public.read_bytes())
    assert isinstance(private, rsa.RSAPrivateKey)
    assert isinstance(public, rsa.RSAPublicKey)

    assert private.key_size == 2048
    assert private.public_key().public_numbers() == public.public_numbers()


def test_private_keys_and_tokens_are_readable_by_their_owner_only(pki: PkiPaths) -> None:
    modes = {
        path.name: stat.S_IMODE(path.stat().st_mode)
        for path in (pki.serving_key, pki.sa_private, pki.tokens)
    }
    assert modes == {"apiserver.key": 0o600, "sa.key": 0o600, "tokens.csv": 0o600}


def test_token_file_has_one_line_per_identity_in_order(pki: PkiPaths) -> None:
    assert pki.tokens.read_text() == (
        't-admin,lab-admin,uid-0,"system:masters"\n'
        't-kcm,system:kube-controller-manager,uid-1,""\n'
        't-node,system:node:edge-1,uid-2,"system:nodes,lab:edge"\n'
    )


def test_token_file_keeps_all_groups_in_one_csv_field(pki: PkiPaths) -> None:
    with pki.tokens.open(newline="") as handle:
        rows = list(csv.reader(handle))

    assert rows == [
        ["t-admin", "lab-admin", "uid-0", "system:masters"],
        ["t-kcm", "system:kube-controller-manager", "uid-1", ""],
        ["t-node", "system:node:edge-1", "uid-2", "system:nodes,lab:edge"],
    ]


def test_new_identity_has_a_fresh_random_token_and_its_groups() -> None:
    first = new_identity("system:node:edge-1", "system:nodes")
    second = new_identity("system:node:edge-1", "system:nodes")

    assert first.user == "system:node:edge-1"
    assert first.groups == ("system:nodes",)
    assert len(first.token) == 48
    assert int(first.token, 16) >= 0
    assert first.token != second.token
