"""Which store URLs the driver serves itself, read as SQLAlchemy's dialects read them, and how a
query's `:name` parameters reach the drivers (pure logic: the reads are tested against the real
databases in tests/integration/test_store_direct.py)."""

from __future__ import annotations

import pytest

from auditor.backends.dbapi import bind, direct_engine


def test_a_postgres_url_is_read_as_libpq_parameters() -> None:
    engine = direct_engine(
        "postgresql+psycopg://da%40tahub:p%3Ass%2Fw@db.example:5433/data%20hub?sslmode=require"
    )
    assert engine is not None and engine.dialect.name == "postgresql"
    assert engine._kwargs == {
        "user": "da@tahub",
        "password": "p:ss/w",
        "host": "db.example",
        "port": 5433,
        "dbname": "data hub",
        "sslmode": "require",
    }


def test_a_mysql_url_takes_sqlalchemys_keys_and_types() -> None:
    engine = direct_engine(
        "mysql+pymysql://u:pw@[::1]/datahub?charset=utf8mb4&connect_timeout=5&ssl_ca=/ca.pem&ssl_check_hostname=false"
    )
    assert engine is not None and engine.dialect.name == "mysql" and engine.dialect.driver == "pymysql"
    assert engine._kwargs == {
        "user": "u",
        "password": "pw",
        "host": "::1",
        "database": "datahub",
        "charset": "utf8mb4",
        "connect_timeout": 5,
        "ssl": {"ca": "/ca.pem", "check_hostname": False},
    }
    assert direct_engine("mariadb+pymysql://u@h/db").dialect.name == "mariadb"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@h/db",  # SQLAlchemy's default driver, not ours
        "postgresql+psycopg2://u@h/db",
        "mysql+mysqldb://u@h/db",
        "sqlite://",
        "mysql+pymysql://u@h/db?local_infile=1",  # a key SQLAlchemy translates its own way
        "mysql+pymysql://u@h/db?charset=utf8&charset=latin1",  # repeated: SQLAlchemy makes a list
        "postgresql+psycopg://u@h1,h2/db",  # several hosts
        "postgresql+psycopg://u@h:notaport/db",
        "mysql+pymysql://u@h/db?connect_timeout=soon",  # SQLAlchemy's error says what is wrong
        "mysql+pymysql://u@h/db?ssl_check_hostname=maybe",
    ],
)
def test_anything_else_stays_with_sqlalchemy(url: str) -> None:
    assert direct_engine(url) is None


def test_parameters_are_bound_as_sqlalchemys_text_binds_them() -> None:
    sql = (
        "SELECT ('x' || LEFT(MD5(a), 15))::bit(60)::bigint FROM t WHERE urn = :urn "
        "AND k LIKE 'urn:li:x%' AND (u > :after_urn OR u = :after_urn) LIMIT :limit"
    )
    assert bind(sql) == (
        "SELECT ('x' || LEFT(MD5(a), 15))::bit(60)::bigint FROM t WHERE urn = %(urn)s "
        "AND k LIKE 'urn:li:x%%' AND (u > %(after_urn)s OR u = %(after_urn)s) LIMIT %(limit)s"
    )
    assert bind("a = :u0 AND b = :u10") == "a = %(u0)s AND b = %(u10)s"
