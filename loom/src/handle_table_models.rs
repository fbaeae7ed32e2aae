//! What the handle table promises hosts that race it (see its module doc),
//! checked in every interleaving: of two removers exactly one gets the object;
//! a lookup racing a removal and the slot's reuse sees the old object or
//! nothing, never the new one; a stale removal racing the slot's reuse (a
//! host answering twice) never takes the new object; threads inserting at once, making the first
//! chunk together, get slots of their own.

use std::sync::Arc;

use loom::thread;

use crate::handle_table::{HandleKind, HandleTable};

/// Runs `model` in every interleaving with up to three preemptions.
fn check(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(model);
}

type Table = HandleTable<&'static str>;

fn table() -> Arc<Table> {
    Arc::new(HandleTable::new(HandleKind::ToolCall))
}

/// Runs `work` with the table on a thread of the model's beside this one.
fn beside<R: 'static>(table: &Arc<Table>, work: impl FnOnce(&Table) -> R + 'static) -> thread::JoinHandle<R> {
    let table = table.clone();
    thread::spawn(move || work(&table))
}

#[test]
fn of_two_removers_exactly_one_gets_the_object() {
    check(|| {
        let table = table();
        let handle = table.insert(Arc::new("object")).unwrap();
        let racer = beside(&table, move |table| table.remove(handle).is_some());
        let removed_here = table.remove(handle).is_some();
        let removed_there = racer.join().unwrap();
        assert!(removed_here != removed_there, "here {removed_here}, there {removed_there}");
        assert!(table.get(handle).is_none());
    });
}

#[test]
fn a_lookup_racing_removal_and_reuse_never_sees_the_new_object() {
    check(|| {
        let table = table();
        let old = table.insert(Arc::new("old")).unwrap();
        let reuser = beside(&table, move |table| {
            assert_eq!(table.remove(old).as_deref(), Some(&"old"));
            table.insert(Arc::new("new")).unwrap()
        });
        let seen = table.get(old);
        let new = reuser.join().unwrap();
        assert!(matches!(seen.as_deref(), None | Some(&"old")), "{seen:?}");
        assert_ne!(new, old);
        assert!(table.get(old).is_none() && table.remove(old).is_none());
        assert_eq!(table.get(new).as_deref(), Some(&"new"));
    });
}

#[test]
fn a_stale_removal_racing_the_slots_reuse_never_takes_the_new_object() {
    check(|| {
        let table = table();
        let old = table.insert(Arc::new("old")).unwrap();
        let reuser = beside(&table, move |table| {
            let removed = table.remove(old);
            (removed.is_some(), table.insert(Arc::new("new")).unwrap())
        });
        let removed_here = table.remove(old);
        let (removed_there, new) = reuser.join().unwrap();
        assert!(matches!(removed_here.as_deref(), None | Some(&"old")), "{removed_here:?}");
        assert!(removed_here.is_some() != removed_there);
        assert_eq!(table.get(new).as_deref(), Some(&"new"));
    });
}

#[test]
fn threads_inserting_at_once_get_slots_of_their_own() {
    check(|| {
        let table = table();
        let other = beside(&table, move |table| table.insert(Arc::new("theirs")).unwrap());
        let mine = table.insert(Arc::new("mine")).unwrap();
        let theirs = other.join().unwrap();
        assert_ne!(mine, theirs);
        assert_eq!(table.get(mine).as_deref(), Some(&"mine"));
        assert_eq!(table.get(theirs).as_deref(), Some(&"theirs"));
    });
}

#[test]
fn a_removal_racing_an_insert_into_the_freed_slots_keeps_both_apart() {
    check(|| {
        let table = table();
        let first = table.insert(Arc::new("first")).unwrap();
        let second = table.insert(Arc::new("second")).unwrap();
        table.remove(first);
        let inserter = beside(&table, move |table| table.insert(Arc::new("third")).unwrap());
        let removed = table.remove(second);
        let third = inserter.join().unwrap();
        assert_eq!(removed.as_deref(), Some(&"second"));
        assert!(third != first && third != second);
        assert_eq!(table.get(third).as_deref(), Some(&"third"));
        assert!(table.get(first).is_none() && table.get(second).is_none());
    });
}
