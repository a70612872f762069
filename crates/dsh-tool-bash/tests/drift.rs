//! Drift guard: every value the bash tools' schemas accept deserializes into
//! their argument types (no `ARGS_DRIFT`), and every value of the types,
//! serialized, validates clean.

use dsh_tool_bash::{BashArgs, TaskIdArgs};
use dsh_tools::testing::assert_no_drift;

#[test]
fn bash_args_do_not_drift() {
    assert_no_drift::<BashArgs>(256);
}

#[test]
fn task_id_args_do_not_drift() {
    assert_no_drift::<TaskIdArgs>(256);
}
