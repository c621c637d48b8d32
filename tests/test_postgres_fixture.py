def test_each_test_gets_its_own_empty_postgres_database(postgres_dsn):
    import psycopg

    with psycopg.connect(postgres_dsn) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'"
        ).fetchone()
        assert tables == (0,)
        conn.execute("CREATE TABLE probe (x int)")
        conn.execute("INSERT INTO probe VALUES (1)")
        assert conn.execute("SELECT x FROM probe").fetchone() == (1,)
