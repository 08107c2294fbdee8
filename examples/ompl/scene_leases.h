/* The robot scenes one ompl_plan run stores in tandemd, shared by its planners.
 *
 * Every planner stores its problem's planning scene (RobotScenePut) before it plans
 * and deletes it after, but identical scene files get one content id (SHA-256 over
 * the robot id and the YAML's bytes, proto/README.md), so two planners whose
 * problems share a scene file share one stored scene: it may be deleted only when
 * the last planner of this run using it is done, and only if this run created it
 * (a scene someone else stored before stays).
 *
 * acquire reads the file, keys it by a SHA-256 computed here over the robot id and
 * exactly the bytes sent (the text up to its first NUL, what tdm_robot_scene_put
 * sends), and takes that key's entry: only planners whose scenes have one key wait
 * for each other; the others put and delete at once, concurrently.
 *
 * Races (one entry per key; the table's lock is held only to find, create or drop
 * an entry, never over a request; an entry's lock is held over its put and its
 * delete, never together with the table's lock):
 *  - put / put of one key: the entry's lock orders them; the first stores the scene
 *    (users 0 -> 1, created as the server says); the others find users > 0, so the
 *    scene is stored and not being deleted, and take its id without a request.
 *  - put / delete of one key: the last user deletes under the entry's lock, after
 *    setting users to 0, and releases the lock only once tandemd has answered; a
 *    planner waiting on it then finds users == 0 and stores the scene again (its own
 *    put, created again), so no planner ever holds the id of a scene being deleted.
 *  - a failed put: nothing is counted (users stays as it was, 0) and nothing is
 *    deleted; the next planner of that key tries its own put. The failure is the
 *    failing planner's problem's error.
 *  - a failed delete: the entry is reset (users 0, not created) and the error is the
 *    deleting planner's; a later put of the key starts afresh.
 *  - different keys, one id (or one key, two ids): impossible unless SHA-256
 *    collides: the key and the id hash the same robot id and the same bytes.
 *  - an entry outlives its users while planners still hold it (pins counted under
 *    the table's lock), so every planner of a key meets the same entry; it is
 *    dropped when the last pin goes, with users 0 and its scene deleted or never
 *    ours.
 * A scene deleted by another client of tandemd meanwhile is not guarded against.
 *
 * Threads: acquire and release from any planner thread, each with its own
 * connection. */
#ifndef TDM_OMPL_SCENE_LEASES_H
#define TDM_OMPL_SCENE_LEASES_H

#include <stdint.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <tandem/tandem.h>

class scene_leases {
    struct entry {
        std::mutex mu;         /* held over this key's put and delete */
        int users = 0;         /* planners that hold the stored scene (under mu) */
        bool created = false;  /* this run's put created it (under mu) */
        uint8_t id[TDM_ID_BYTES];
        int pins = 0;          /* planners between acquire and the end of release (under the table's mu) */
    };

public:
    /* One planner's hold on a stored scene. */
    struct lease {
        uint8_t id[TDM_ID_BYTES] = {0}; /* the robot scene's id, once acquired */
        std::string key;
        std::shared_ptr<entry> e; /* null: not held */
    };
    /* Reads yaml_path and makes sure it is stored as a robot scene of robot_id
     * (named name) in tandemd through c, for this planner: *out holds it until
     * release. Returns 0, or -1 with *err naming the file (a read failure) or
     * tandemd's error; nothing is then held. */
    int acquire(tdm_client *c, const char *name, const uint8_t robot_id[TDM_ID_BYTES], const char *yaml_path,
                lease *out, std::string *err);
    /* Gives l up (no-op when not held); when it was the last hold of a scene this run
     * created, deletes the scene through c. Returns 0, or -1 with *err when the delete
     * failed. */
    int release(tdm_client *c, lease *l, std::string *err);
    /* Entries in the table (keys some planner holds or is acquiring): 0 once every
     * lease is released. */
    size_t size();

private:
    void unpin(const std::string &key);
    std::mutex mu_; /* the table */
    std::map<std::string, std::shared_ptr<entry>> table_;
};

#endif
