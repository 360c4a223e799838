/*
 * test_gc.c - tests for lib/agent/gc.c, the container garbage collection's choice of
 * dead containers as kubelet's evictContainers makes it: per (pod, container name) the
 * newest MaxPerPodContainer stay, MinAge spares young ones, MaxContainers caps the node
 * (evenly per unit first, then the oldest), running containers and the ones the agent
 * keeps are never chosen; and the image GC's choice as kubelet's freeSpace makes it:
 * unused images, least recently used first, pinned and young ones spared, until enough.
 */
#include "cktest.h"

#include "../../lib/agent/internal.h"

#define NOW (1000000 * CK_SEC)

/* A dead container created `age` seconds before NOW. */
static struct ck__gc_container dead(const char *uid, const char *name, int attempt, int64_t age)
{
    return (struct ck__gc_container){
        .pod_uid = uid, .name = name, .attempt = attempt, .created_at = NOW - age * CK_SEC};
}

/* The attempts marked, as a string "name:attempt ..." in c's order. */
static const char *marked(const struct ck__gc_container *c, size_t n)
{
    static char buf[512];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (c[i].evict)
            len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s/%s:%d", len ? " " : "",
                                    c[i].pod_uid, c[i].name, c[i].attempt);
    return buf;
}

static size_t run(struct ck__gc_container *c, size_t n, int64_t min_age, int per, int max)
{
    struct ck__rt_gc_policy policy = {min_age, per, max};
    size_t count = 99;
    assert_int_equal(ck__gc_select(c, n, &policy, NOW, &count), 0);
    return count;
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_one_per_container_keeps_the_newest_dead_never_the_running(void **state)
{
    (void)state;
    /* a crash loop: attempts 0..3 dead, 4 running; another container with one dead */
    struct ck__gc_container c[] = {dead("p", "c", 2, 30), dead("p", "c", 0, 50),
                                   dead("p", "c", 3, 20), dead("p", "c", 1, 40),
                                   dead("p", "c", 4, 10), dead("p", "side", 0, 60)};
    c[4].running = true;
    assert_int_equal(run(c, N(c), 0, 1, -1), 3);
    assert_string_equal(marked(c, N(c)), "p/c:2 p/c:0 p/c:1");
}

static void test_two_per_container(void **state)
{
    (void)state;
    struct ck__gc_container c[] = {dead("p", "c", 0, 50), dead("p", "c", 1, 40),
                                   dead("p", "c", 2, 30), dead("q", "c", 0, 5),
                                   dead("q", "c", 1, 4)};
    assert_int_equal(run(c, N(c), 0, 2, -1), 1);
    assert_string_equal(marked(c, N(c)), "p/c:0");
}

static void test_no_limits_remove_nothing(void **state)
{
    (void)state;
    struct ck__gc_container c[] = {dead("p", "c", 0, 50), dead("p", "c", 1, 40),
                                   dead("p", "c", 2, 30)};
    assert_int_equal(run(c, N(c), 0, -1, -1), 0);
    /* no dead containers kept at all: every one goes */
    assert_int_equal(run(c, N(c), 0, 0, -1), 3);
}

static void test_min_age_spares_young_ones_and_they_do_not_count(void **state)
{
    (void)state;
    /* 0 and 1 are older than a minute, 2 and 3 younger */
    struct ck__gc_container c[] = {dead("p", "c", 0, 300), dead("p", "c", 1, 120),
                                   dead("p", "c", 2, 30), dead("p", "c", 3, 10)};
    assert_int_equal(run(c, N(c), 60 * CK_SEC, 1, -1), 1);
    assert_string_equal(marked(c, N(c)), "p/c:0");
    /* with no minimum age, the newest alone stays */
    assert_int_equal(run(c, N(c), 0, 1, -1), 3);
    assert_string_equal(marked(c, N(c)), "p/c:0 p/c:1 p/c:2");
}

static void test_max_containers_evenly_per_unit_first(void **state)
{
    (void)state;
    /* three units of 4, 2 and 1 dead; the node keeps 4: 4/3 = 1 each, 3 left */
    struct ck__gc_container c[] = {
        dead("a", "c", 0, 90), dead("a", "c", 1, 80), dead("a", "c", 2, 70), dead("a", "c", 3, 60),
        dead("b", "c", 0, 50), dead("b", "c", 1, 40), dead("c", "c", 0, 100)};
    assert_int_equal(run(c, N(c), 0, -1, 4), 4);
    assert_string_equal(marked(c, N(c)), "a/c:0 a/c:1 a/c:2 b/c:0");
    /* a cap of 6: 6/3 = 2 per unit, 5 left */
    assert_int_equal(run(c, N(c), 0, -1, 6), 2);
    assert_string_equal(marked(c, N(c)), "a/c:0 a/c:1");
}

static void test_max_containers_then_the_oldest_of_all(void **state)
{
    (void)state;
    /* three units and a cap of 2: one each (2/3 rounds up to 1), then the oldest goes */
    struct ck__gc_container c[] = {dead("a", "c", 0, 90), dead("a", "c", 1, 10),
                                   dead("b", "c", 0, 20), dead("c", "c", 0, 30),
                                   dead("c", "c", 1, 5)};
    assert_int_equal(run(c, N(c), 0, 1, 2), 3);
    assert_string_equal(marked(c, N(c)), "a/c:0 b/c:0 c/c:0");
    /* a cap of 0: every dead one */
    assert_int_equal(run(c, N(c), 0, -1, 0), 5);
}

static void test_max_containers_oldest_by_attempt_across_units(void **state)
{
    (void)state;
    /* as kubelet's byAttempt: b's attempt 0 is "older" than a's attempt 5, though newer */
    struct ck__gc_container c[] = {dead("a", "c", 5, 100), dead("b", "c", 0, 10)};
    assert_int_equal(run(c, N(c), 0, -1, 1), 1);
    assert_string_equal(marked(c, N(c)), "b/c:0");
}

static void test_kept_attempts_count_but_are_never_marked(void **state)
{
    (void)state;
    /*
     * In back-off: attempt 3 (current) and 2 (the previous, its log served) are dead and
     * kept; 3 is the newest and stays anyway, 2 would go and is skipped, 0 and 1 go.
     */
    struct ck__gc_container c[] = {dead("p", "c", 0, 40), dead("p", "c", 1, 30),
                                   dead("p", "c", 2, 20), dead("p", "c", 3, 10)};
    c[2].kept = c[3].kept = true;
    assert_int_equal(run(c, N(c), 0, 1, -1), 2);
    assert_string_equal(marked(c, N(c)), "p/c:0 p/c:1");
    assert_int_equal(run(c, N(c), 0, 0, 0), 2);
    assert_string_equal(marked(c, N(c)), "p/c:0 p/c:1");
}

/* An image of size MiB, first seen `seen` s and last used `used` s before NOW. */
static struct ck__gc_image image(const char *id, uint64_t mib, int64_t seen, int64_t used)
{
    return (struct ck__gc_image){.id = id,
                                 .size = mib << 20,
                                 .first_detected = NOW - seen * CK_SEC,
                                 .last_used = NOW - used * CK_SEC};
}

static const char *removed(const struct ck__gc_image *img, size_t n)
{
    static char buf[256];
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n; i++)
        if (img[i].remove)
            len +=
                (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s", len ? " " : "", img[i].id);
    return buf;
}

static void test_images_least_recently_used_first_until_enough(void **state)
{
    (void)state;
    struct ck__gc_image img[] = {image("new", 10, 600, 100), image("old", 10, 600, 500),
                                 image("mid", 10, 600, 300), image("used", 50, 600, 900)};
    img[3].in_use = true;
    uint64_t freed = 0;
    /* 15 MiB to free: the least recently used two (10 MiB is not enough) */
    assert_int_equal(ck__image_gc_select(img, 4, 15u << 20, 0, NOW, &freed), 0);
    assert_string_equal(removed(img, 4), "old mid");
    assert_int_equal(freed, 20u << 20);
    /* more than all of them: every unused image, and less freed than asked */
    assert_int_equal(ck__image_gc_select(img, 4, 100u << 20, 0, NOW, &freed), 0);
    assert_string_equal(removed(img, 4), "new old mid");
    assert_int_equal(freed, 30u << 20);
}

static void test_images_same_last_use_first_detected_first(void **state)
{
    (void)state;
    struct ck__gc_image img[] = {image("b", 1, 100, 50), image("a", 1, 200, 50)};
    uint64_t freed = 0;
    assert_int_equal(ck__image_gc_select(img, 2, 1, 0, NOW, &freed), 0);
    assert_string_equal(removed(img, 2), "a");
}

static void test_images_pinned_and_young_ones_stay(void **state)
{
    (void)state;
    /* "young" was first seen a minute ago: under the kubelet's 2 minutes */
    struct ck__gc_image img[] = {image("pause", 1, 900, 900), image("young", 1, 60, 60),
                                 image("old", 1, 900, 800)};
    img[0].pinned = true;
    uint64_t freed = 0;
    assert_int_equal(ck__image_gc_select(img, 3, 100u << 20, 120 * CK_SEC, NOW, &freed), 0);
    assert_string_equal(removed(img, 3), "old");
    assert_int_equal(freed, 1u << 20);
    /* nothing to free: nothing removed */
    assert_int_equal(ck__image_gc_select(img, 3, 0, 0, NOW, &freed), 0);
    assert_string_equal(removed(img, 3), "");
    assert_int_equal(freed, 0);
}

static void test_empty_list(void **state)
{
    (void)state;
    struct ck__gc_container c[1];
    assert_int_equal(run(c, 0, 0, 1, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_per_container_keeps_the_newest_dead_never_the_running),
        cmocka_unit_test(test_two_per_container),
        cmocka_unit_test(test_no_limits_remove_nothing),
        cmocka_unit_test(test_min_age_spares_young_ones_and_they_do_not_count),
        cmocka_unit_test(test_max_containers_evenly_per_unit_first),
        cmocka_unit_test(test_max_containers_then_the_oldest_of_all),
        cmocka_unit_test(test_max_containers_oldest_by_attempt_across_units),
        cmocka_unit_test(test_kept_attempts_count_but_are_never_marked),
        cmocka_unit_test(test_images_least_recently_used_first_until_enough),
        cmocka_unit_test(test_images_same_last_use_first_detected_first),
        cmocka_unit_test(test_images_pinned_and_young_ones_stay),
        cmocka_unit_test(test_empty_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
