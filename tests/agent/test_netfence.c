/* test_netfence.c - the network fence's ruleset, its destinations and its
 * bookkeeping (src/agent/launch/netfence.c); where root and nft are
 * present, the generated text is loaded by nft and removed again. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/launch/netfence.h"

static gp_netfence_dest dest(const char *text)
{
    gp_netfence_dest d;
    gp_error err;
    assert_int_equal(gp_netfence_dest_parse(text, &d, &err), GP_OK);
    return d;
}

/* The worked example of netfence.c: job 7 of research/nlp with a peer,
 * job 9 of vision with an egress port, on node h100-1. */
static gp_netfence *example(void)
{
    gp_netfence *f = NULL;
    gp_error err;
    assert_int_equal(gp_netfence_open("h100-1", "# comment\nnameserver 10.255.255.53\nsearch x\n", NULL, &f, &err),
                     GP_OK);
    static gp_netfence_dest peer, egress;
    peer = dest("192.0.2.3");
    egress = dest("10.0.0.0/8:443");
    gp_netfence_replica vision = {.name = "job9-r0-100", .tenant = "vision", .uid = 2000000009,
                                  .egress = &egress, .n_egress = 1};
    gp_netfence_replica nlp = {.name = "job7-r1-100", .tenant = "research/nlp", .uid = 2000000007,
                               .peers = &peer, .n_peers = 1};
    assert_int_equal(gp_netfence_add(f, &nlp, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &vision, &err), GP_OK);
    return f;
}

static const char EXAMPLE[] =
    "table inet gpupool_h100_1\n"
    "delete table inet gpupool_h100_1\n"
    "table inet gpupool_h100_1 {\n"
    "\tchain output {\n"
    "\t\ttype filter hook output priority filter; policy accept;\n"
    "\t\tct direction reply jump answer\n"
    "\t\tct state established,related accept\n"
    "\t\tmeta skuid vmap { 2000000007 : jump out_2000000007, 2000000009 : jump out_2000000009 }\n"
    "\t}\n"
    "\tchain answer {\n"
    "\t\tmeta skuid vmap { 2000000007 : jump answer_2000000007, 2000000009 : jump answer_2000000009 }\n"
    "\t\tct mark 0x475c3b00 accept\n"
    "\t\tct mark 0x475c3b02 ip saddr 10.0.0.0/8 meta l4proto tcp th sport 443 accept\n"
    "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"
    "\t}\n"
    "\tchain out_2000000007 {\n"
    "\t\tip daddr 10.255.255.53 meta l4proto { tcp, udp } th dport 53 ct mark set 0x475c3b00 accept\n"
    "\t\tfib daddr type local meta l4proto tcp ct mark set 0x475c3b01 accept\n"
    "\t\tfib daddr type local drop\n"
    "\t\tip daddr 192.0.2.3 meta l4proto tcp accept\n"
    "\t\tdrop\n"
    "\t}\n"
    "\tchain answer_2000000007 {\n"
    "\t\tct mark 0x475c3b01 accept\n"
    "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"
    "\t\tfib daddr type local accept\n"
    "\t\tip daddr 192.0.2.3 accept\n"
    "\t\tdrop\n"
    "\t}\n"
    "\tchain out_2000000009 {\n"
    "\t\tip daddr 10.255.255.53 meta l4proto { tcp, udp } th dport 53 ct mark set 0x475c3b00 accept\n"
    "\t\tfib daddr type local meta l4proto tcp ct mark set 0x475c3b02 accept\n"
    "\t\tfib daddr type local drop\n"
    "\t\tip daddr 10.0.0.0/8 meta l4proto { tcp, udp } th dport 443 accept\n"
    "\t\tdrop\n"
    "\t}\n"
    "\tchain answer_2000000009 {\n"
    "\t\tct mark 0x475c3b02 accept\n"
    "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"
    "\t\tfib daddr type local accept\n"
    "\t\tip daddr 10.0.0.0/8 accept\n"
    "\t\tdrop\n"
    "\t}\n"
    "}\n";

static void the_worked_example_is_the_text(void **state)
{
    (void)state;
    gp_netfence *f = example();
    char *text = gp_netfence_ruleset(f);
    assert_string_equal(text, EXAMPLE);
    free(text);
    gp_netfence_free(f);
}

/* Two nodes' tables (two agents on one host, or sim nodes) mark with
 * marks of their own: one table's "marked, not by my replica: drop" rule
 * never matches a connection the other marked. */
static void two_tables_mark_apart(void **state)
{
    (void)state;
    char bases[2][16];
    const char *nodes[2] = {"h100-1", "h100-2"};
    for (int i = 0; i < 2; i++) {
        gp_netfence *f = NULL;
        gp_error err;
        assert_int_equal(gp_netfence_open(nodes[i], NULL, NULL, &f, &err), GP_OK);
        gp_netfence_replica r = {.name = "job5-r0-1", .tenant = "t", .uid = 2000000005};
        assert_int_equal(gp_netfence_add(f, &r, &err), GP_OK);
        char *text = gp_netfence_ruleset(f);
        const char *drop = strstr(text, "ct mark and 0xffffff00 == 0x");
        assert_non_null(drop);
        snprintf(bases[i], sizeof bases[i], "%.10s", drop + strlen("ct mark and 0xffffff00 == "));
        assert_non_null(strstr(text, "fib daddr type local meta l4proto tcp ct mark set"));
        free(text);
        gp_netfence_free(f);
    }
    assert_string_not_equal(bases[0], bases[1]);
    assert_int_equal(strncmp(bases[0], "0x475", 5), 0);
}

/* Two replicas of one job share a uid: one pair of chains, both peers. */
static void replicas_of_one_uid_share_chains(void **state)
{
    (void)state;
    gp_netfence *f = NULL;
    gp_error err;
    assert_int_equal(gp_netfence_open("n", NULL, NULL, &f, &err), GP_OK);
    gp_netfence_dest a = dest("192.0.2.3"), b = dest("2001:db8::7");
    gp_netfence_replica r0 = {.name = "job5-r0-1", .tenant = "t", .uid = 2000000005, .peers = &a, .n_peers = 1};
    gp_netfence_replica r1 = {.name = "job5-r1-1", .tenant = "t", .uid = 2000000005, .peers = &b, .n_peers = 1};
    assert_int_equal(gp_netfence_add(f, &r0, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &r1, &err), GP_OK);
    char *text = gp_netfence_ruleset(f);
    assert_non_null(strstr(text, "meta skuid vmap { 2000000005 : jump out_2000000005 }\n"));
    assert_non_null(strstr(text, "\t\tip daddr 192.0.2.3 meta l4proto tcp accept\n"
                                 "\t\tip6 daddr 2001:db8::7 meta l4proto tcp accept\n"
                                 "\t\tdrop\n"));
    assert_null(strstr(strstr(text, "chain out_2000000005") + 1, "chain out_2000000005"));
    free(text);
    gp_netfence_free(f);
}

/* The mark of tenant T's chains: "chain out_UID {" ... "ct mark set 0x...". */
static unsigned mark_in(const char *text, const char *uid)
{
    char head[64];
    snprintf(head, sizeof head, "chain out_%s {", uid);
    const char *chain = strstr(text, head), *set = chain ? strstr(chain, "ct mark set 0x") : NULL;
    assert_non_null(set);
    return (unsigned)strtoul(set + strlen("ct mark set "), NULL, 16) & 0xffu;
}

/* A tenant keeps its mark while it has replicas here: another tenant's
 * end does not re-mark its open connections (its answers are checked
 * against the mark on every packet), a newcomer takes the lowest free
 * mark, and after an agent restart each replica's mark comes back
 * whatever order the replicas are adopted in. */
static void a_tenants_mark_outlives_other_tenants_ends_and_restarts(void **state)
{
    (void)state;
    gp_netfence *f = NULL;
    gp_error err;
    assert_int_equal(gp_netfence_open("n", NULL, NULL, &f, &err), GP_OK);
    gp_netfence_replica a = {.name = "job1-r0-1", .tenant = "a", .uid = 2000000001};
    gp_netfence_replica b = {.name = "job2-r0-1", .tenant = "b", .uid = 2000000002};
    gp_netfence_replica c = {.name = "job3-r0-1", .tenant = "c", .uid = 2000000003};
    gp_netfence_replica c2 = {.name = "job4-r0-1", .tenant = "c", .uid = 2000000004};
    assert_int_equal(gp_netfence_add(f, &a, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &b, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &c, &err), GP_OK);
    assert_int_equal(gp_netfence_mark_of(f, "job3-r0-1"), 3);
    assert_true(gp_netfence_remove(f, "job1-r0-1")); /* a ends: b and c keep theirs */
    char *text = gp_netfence_ruleset(f);
    assert_int_equal(mark_in(text, "2000000002"), 2);
    assert_int_equal(mark_in(text, "2000000003"), 3);
    free(text);
    assert_int_equal(gp_netfence_add(f, &c2, &err), GP_OK); /* c's second replica: c's mark */
    assert_int_equal(gp_netfence_mark_of(f, "job4-r0-1"), 3);
    gp_netfence_replica d = {.name = "job5-r0-1", .tenant = "d", .uid = 2000000005};
    assert_int_equal(gp_netfence_add(f, &d, &err), GP_OK); /* the lowest free */
    assert_int_equal(gp_netfence_mark_of(f, "job5-r0-1"), 1);
    gp_netfence_free(f);
    /* a restart adopts c first, then b, then d, each with the mark it kept */
    assert_int_equal(gp_netfence_open("n", NULL, NULL, &f, &err), GP_OK);
    c.mark = 3, b.mark = 2, d.mark = 1;
    assert_int_equal(gp_netfence_add(f, &c, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &b, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &d, &err), GP_OK);
    assert_int_equal(gp_netfence_mark_of(f, "job3-r0-1"), 3);
    assert_int_equal(gp_netfence_mark_of(f, "job2-r0-1"), 2);
    assert_int_equal(gp_netfence_mark_of(f, "job5-r0-1"), 1);
    gp_netfence_replica e = {.name = "job6-r0-1", .tenant = "e", .uid = 2000000006, .mark = 2};
    assert_int_equal(gp_netfence_add(f, &e, &err), GP_OK); /* 2 is b's: another */
    assert_int_equal(gp_netfence_mark_of(f, "job6-r0-1"), 4);
    gp_netfence_free(f);
}

/* A uid of one tenant's running replica is refused for another tenant's. */
static void a_uid_is_one_tenants(void **state)
{
    (void)state;
    gp_netfence *f = example();
    gp_error err;
    gp_netfence_replica other = {.name = "job11-r0-5", .tenant = "vision", .uid = 2000000007};
    assert_int_equal(gp_netfence_add(f, &other, &err), GP_ERR_CONFLICT);
    assert_string_equal(err.field, "network");
    assert_non_null(strstr(err.message, "research/nlp"));
    assert_int_equal(gp_netfence_count(f), 2);
    gp_netfence_free(f);
}

/* No replica left: the script only removes the table. */
static void the_last_end_removes_the_table(void **state)
{
    (void)state;
    gp_netfence *f = example();
    assert_true(gp_netfence_remove(f, "job7-r1-100"));
    assert_true(gp_netfence_remove(f, "job9-r0-100"));
    assert_false(gp_netfence_remove(f, "job9-r0-100"));
    assert_int_equal(gp_netfence_count(f), 0);
    char *text = gp_netfence_ruleset(f);
    assert_string_equal(text, "table inet gpupool_h100_1\ndelete table inet gpupool_h100_1\n");
    free(text);
    gp_netfence_free(f);
}

static void destinations_parse_and_bad_ones_are_refused(void **state)
{
    (void)state;
    gp_netfence_dest d = dest("[2001:db8::/32]:443");
    assert_int_equal(d.family, AF_INET6);
    assert_int_equal(d.prefix, 32);
    assert_int_equal(d.port, 443);
    d = dest("192.0.2.7:53");
    assert_int_equal(d.family, AF_INET);
    assert_int_equal(d.prefix, 32);
    assert_int_equal(d.port, 53);
    d = dest("::1");
    assert_int_equal(d.prefix, 128);
    assert_int_equal(d.port, 0);
    const char *bad[] = {"", "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0:0", "10.0.0.0:65536", "host.example",
                         "10.0.0.0/8; flush ruleset", "[::1", "[::1]443", "10.0.0.0/8:", "1.2.3.4:5:6"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gp_error err;
        assert_int_equal(gp_netfence_dest_parse(bad[i], &d, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "egress");
    }
}

/* reach_from: vision lets research in (its subtree too); research/nlp's
 * connections, marked 0x...01, are then answered by vision's replica,
 * vision's are not answered by research/nlp's (one way), and ops, not
 * named, is answered by nobody but itself.  "research-x" is no subtree of
 * "research". */
static void reach_from_lets_in_the_named_subtrees_one_way(void **state)
{
    (void)state;
    gp_netfence *f = NULL;
    gp_error err;
    assert_int_equal(gp_netfence_open("h100-1", NULL, NULL, &f, &err), GP_OK);
    const char *let_in[] = {"research", "ops/none-here"};
    gp_netfence_replica nlp = {.name = "job7-r0-1", .tenant = "research/nlp", .uid = 2000000007};
    gp_netfence_replica vision = {.name = "job9-r0-1", .tenant = "vision", .uid = 2000000009,
                                  .reach_from = let_in, .n_reach_from = 2};
    gp_netfence_replica ops = {.name = "job11-r0-1", .tenant = "ops", .uid = 2000000011};
    gp_netfence_replica near = {.name = "job13-r0-1", .tenant = "research-x", .uid = 2000000013};
    assert_int_equal(gp_netfence_add(f, &nlp, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &vision, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &ops, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &near, &err), GP_OK);
    char *text = gp_netfence_ruleset(f);
    assert_non_null(strstr(text, "\tchain answer_2000000009 {\n"
                                 "\t\tct mark 0x475c3b02 accept\n"
                                 "\t\tct mark 0x475c3b01 accept\n"
                                 "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"));
    assert_non_null(strstr(text, "\tchain answer_2000000007 {\n"
                                 "\t\tct mark 0x475c3b01 accept\n"
                                 "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"));
    assert_non_null(strstr(text, "\tchain answer_2000000011 {\n"
                                 "\t\tct mark 0x475c3b03 accept\n"
                                 "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"));
    free(text);
    /* research's replicas gone: vision lets no mark in but its own */
    assert_true(gp_netfence_remove(f, "job7-r0-1"));
    text = gp_netfence_ruleset(f);
    assert_non_null(strstr(text, "\tchain answer_2000000009 {\n"
                                 "\t\tct mark 0x475c3b02 accept\n"
                                 "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"));
    free(text);
    gp_netfence_free(f);
}

static int occurrences(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* Across nodes: vision's replica answers TCP to the node where research
 * runs (192.0.2.10); research's replica may open TCP to the node where
 * vision runs (2001:db8::20), any port; neither gets the other's rule. */
static void reach_from_across_nodes_opens_node_addresses_one_way(void **state)
{
    (void)state;
    gp_netfence *f = NULL;
    gp_error err;
    assert_int_equal(gp_netfence_open("h100-1", NULL, NULL, &f, &err), GP_OK);
    gp_netfence_dest research_node = dest("192.0.2.10"), vision_node = dest("2001:db8::20");
    const char *let_in[] = {"research"};
    gp_netfence_replica vision = {.name = "job9-r0-1", .tenant = "vision", .uid = 2000000009, .reach_from = let_in,
                                  .n_reach_from = 1, .from_nodes = &research_node, .n_from_nodes = 1};
    gp_netfence_replica nlp = {.name = "job7-r0-1", .tenant = "research/nlp", .uid = 2000000007,
                               .to_nodes = &vision_node, .n_to_nodes = 1};
    assert_int_equal(gp_netfence_add(f, &vision, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &nlp, &err), GP_OK);
    char *text = gp_netfence_ruleset(f);
    assert_non_null(strstr(text, "\t\tfib daddr type local drop\n"
                                 "\t\tip6 daddr 2001:db8::20 meta l4proto tcp accept\n"
                                 "\t\tdrop\n"
                                 "\t}\n"
                                 "\tchain answer_2000000007 {\n"));
    assert_non_null(strstr(text, "\tchain answer_2000000009 {\n"
                                 "\t\tct mark 0x475c3b01 accept\n"
                                 "\t\tct mark 0x475c3b02 accept\n"
                                 "\t\tct mark and 0xffffff00 == 0x475c3b00 drop\n"
                                 "\t\tfib daddr type local accept\n"
                                 "\t\tip daddr 192.0.2.10 meta l4proto tcp accept\n"
                                 "\t\tdrop\n"));
    assert_int_equal(occurrences(text, "192.0.2.10"), 1); /* only in vision's answers */
    assert_int_equal(occurrences(text, "2001:db8::20"), 1); /* only in research's out chain */
    free(text);
    /* a poll answer later: research now runs on another node too; the same list again changes nothing */
    gp_netfence_dest moved[] = {dest("192.0.2.10"), dest("192.0.2.11")};
    assert_true(gp_netfence_nodes_set(f, "job9-r0-1", moved, 2, NULL, 0));
    assert_false(gp_netfence_nodes_set(f, "job9-r0-1", moved, 2, NULL, 0));
    assert_false(gp_netfence_nodes_set(f, "job99-r0-1", moved, 1, NULL, 0));
    text = gp_netfence_ruleset(f);
    assert_non_null(strstr(text, "\t\tip daddr 192.0.2.10 meta l4proto tcp accept\n"
                                 "\t\tip daddr 192.0.2.11 meta l4proto tcp accept\n"
                                 "\t\tdrop\n"));
    assert_non_null(strstr(text, "\tchain answer_2000000009 {\n\t\tct mark 0x475c3b01 accept\n"
                                 "\t\tct mark 0x475c3b02 accept\n")); /* the rest as added */
    free(text);
    gp_netfence_free(f);
}

static void reach_from_entries_are_tenant_paths(void **state)
{
    (void)state;
    gp_error err;
    const char *good[] = {"research", "research/nlp", "a/b/c/d", "Team_1.x-y"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_int_equal(gp_reach_entry_check(good[i], 192, &err), GP_OK);
    const char *bad[] = {"", "/research", "research/", "a//b", ".hidden", "a/../b", "a/b/c/d/e", "b; flush ruleset",
                         "b }", "b\naccept", "*", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gp_reach_entry_check(bad[i], 192, &err), GP_ERR_INVALID);
        assert_string_equal(err.field, "reach_from");
    }
    assert_int_equal(gp_reach_entry_check("abcdef", 6, &err), GP_ERR_INVALID);
    assert_true(gp_reach_covers("research", "research"));
    assert_true(gp_reach_covers("research", "research/nlp/x"));
    assert_false(gp_reach_covers("research", "research-x"));
    assert_false(gp_reach_covers("research/nlp", "research"));
}

/* The generated text is what nft takes: loaded, then removed. */
static void nft_loads_the_text(void **state)
{
    (void)state;
    gp_error err;
    if (geteuid() != 0 || !gp_netfence_probe(NULL, &err)) {
        printf("SKIP nft_loads_the_text: %s\n", geteuid() != 0 ? "not root" : err.message);
        return;
    }
    gp_netfence *f = NULL;
    assert_int_equal(gp_netfence_open("gp-unit-test", "nameserver 10.255.255.53\nnameserver ::1\n", NULL, &f, &err),
                     GP_OK);
    gp_netfence_dest peer = dest("2001:db8::7"), egress = dest("[2001:db8::/32]:443");
    gp_netfence_dest node = dest("192.0.2.10");
    const char *let_in[] = {"t"};
    gp_netfence_replica r = {.name = "job1-r0-1", .tenant = "t", .uid = 3999999999u, .peers = &peer,
                             .n_peers = 1, .egress = &egress, .n_egress = 1, .to_nodes = &node, .n_to_nodes = 1};
    gp_netfence_replica lets_t_in = {.name = "job2-r0-1", .tenant = "u", .uid = 3999999998u, .reach_from = let_in,
                                     .n_reach_from = 1, .from_nodes = &node, .n_from_nodes = 1};
    assert_int_equal(gp_netfence_add(f, &r, &err), GP_OK);
    assert_int_equal(gp_netfence_add(f, &lets_t_in, &err), GP_OK);
    gp_err rc = gp_netfence_apply(f, &err);
    assert_int_equal(rc, GP_OK);
    assert_int_equal(system("nft list table inet gpupool_gp_unit_test >/dev/null 2>&1"), 0);
    assert_true(gp_netfence_remove(f, "job2-r0-1"));
    assert_true(gp_netfence_remove(f, "job1-r0-1"));
    assert_int_equal(gp_netfence_apply(f, &err), GP_OK);
    assert_int_not_equal(system("nft list table inet gpupool_gp_unit_test >/dev/null 2>&1"), 0);
    gp_netfence_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_worked_example_is_the_text),
        cmocka_unit_test(two_tables_mark_apart),
        cmocka_unit_test(replicas_of_one_uid_share_chains),
        cmocka_unit_test(a_uid_is_one_tenants),
        cmocka_unit_test(a_tenants_mark_outlives_other_tenants_ends_and_restarts),
        cmocka_unit_test(the_last_end_removes_the_table),
        cmocka_unit_test(destinations_parse_and_bad_ones_are_refused),
        cmocka_unit_test(reach_from_lets_in_the_named_subtrees_one_way),
        cmocka_unit_test(reach_from_across_nodes_opens_node_addresses_one_way),
        cmocka_unit_test(reach_from_entries_are_tenant_paths),
        cmocka_unit_test(nft_loads_the_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
