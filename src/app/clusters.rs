//! The Clusters view's model: the queue grouped (from the counter worker),
//! a cursor over the groups, and what Enter on a group means: the Queue's
//! filter term that shows it, so an incident found as a group becomes the
//! rows to decide on in one key. Pure: the grouping is
//! asked for as an effect and arrives as a message.

use super::pane::PaneCursor;
use super::window::{Fetch, Merge};
use crate::domain::{Cluster, ClusterDimension, Clusters};

/// Groups kept per dimension: enough for an incident and its neighbours;
/// the rest are counted under "… N more groups".
pub const TOP_GROUPS: usize = 8;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClustersPane {
    /// `None` until the first grouping arrives; a refresh keeps the last
    /// one on screen until the next arrives.
    pub clusters: Option<Clusters>,
    /// Index into [`Clusters::groups`].
    pub cursor: usize,
}

impl ClustersPane {
    pub fn selected(&self) -> Option<&Cluster> {
        self.clusters.as_ref()?.groups().nth(self.cursor)
    }

    fn len(&self) -> usize {
        self.clusters.as_ref().map_or(0, |c| c.groups().count())
    }

    /// A new grouping: the cursor stays on the same group when it is still
    /// there (the counts moved, the incident did not), else where it was.
    pub fn loaded(&mut self, clusters: Clusters) {
        let was = self.selected().map(|c| (c.dimension, c.value.clone()));
        self.cursor = was
            .and_then(|(d, v)| {
                clusters
                    .groups()
                    .position(|c| c.dimension == d && c.value == v)
            })
            .unwrap_or(self.cursor);
        self.clusters = Some(clusters);
        self.cursor = self.cursor.min(self.len().saturating_sub(1));
    }
}

/// The pane scrolls by drawing (the groups and their headings are few);
/// the cursor only moves among the groups held.
impl PaneCursor for ClustersPane {
    fn move_by(&mut self, delta: isize, _height: usize) -> Option<(Fetch, Merge)> {
        let last = self.len().saturating_sub(1);
        let at = (self.cursor as isize).saturating_add(delta);
        self.cursor = usize::try_from(at.max(0)).unwrap_or(0).min(last);
        None
    }

    fn scroll_to_cursor(&mut self, _height: usize) {
        self.cursor = self.cursor.min(self.len().saturating_sub(1));
    }

    fn refresh_request(&self) -> Option<(Fetch, Merge, usize)> {
        None
    }

    /// Headings sit between the groups, so a screen row is not a group's
    /// place: a click picks none (the wheel and keys still move).
    fn to_shown(&self, _offset: usize) -> Option<isize> {
        None
    }
}

/// The Queue filter term that shows `group`, or why none can: the filter
/// language has no age term and no "no error" term, and a type or account
/// holding `,`, `*` or `"` would read as several values or a pattern.
/// `err:` matches any attempt's error as a substring, so the filtered
/// Queue holds the group and may hold a few more.
pub fn filter_term(group: &Cluster) -> Result<String, &'static str> {
    let Some(value) = group.value.as_deref() else {
        return Err("the filter has no term for operations without an error");
    };
    let quoted = |name: &str, v: &str| {
        if v.chars().any(char::is_whitespace) {
            format!("{name}:\"{v}\"")
        } else {
            format!("{name}:{v}")
        }
    };
    match group.dimension {
        ClusterDimension::Age => {
            Err("the filter has no age term: pick a receiver, account or error")
        }
        ClusterDimension::OpType | ClusterDimension::Account => {
            let name = if group.dimension == ClusterDimension::OpType {
                "type"
            } else {
                "account"
            };
            if value.is_empty() || value.contains([',', '*', '"']) {
                return Err("this value cannot be written as a filter term");
            }
            Ok(quoted(name, value))
        }
        ClusterDimension::LastError => {
            // A substring match: the text before a quote still finds it.
            let before_quote = value.split('"').next().unwrap_or_default();
            if before_quote.trim().is_empty() {
                return Err("this error cannot be written as a filter term");
            }
            Ok(quoted("err", before_quote))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::app::testkit::Harness;
    use crate::app::{Count, Effect, View};
    use crate::domain::ClusterDimension;

    /// The fixture's queue: four create_report and one place_order; the
    /// cursor starts on the biggest receiver.
    #[test]
    fn enter_on_a_receiver_shows_the_queue_filtered_to_it() {
        let mut h = Harness::new();
        let effects = h.keys("5");
        assert!(
            effects
                .iter()
                .any(|e| matches!(e, Effect::Count(Count::Clusters { .. }))),
            "showing the view asks for the grouping: {effects:?}"
        );
        let first = h.app.clusters.selected().unwrap();
        assert_eq!(first.dimension, ClusterDimension::OpType);
        assert_eq!(
            (first.value.as_deref(), first.count),
            (Some("create_report"), 4)
        );

        h.keys("j enter");
        assert_eq!(h.app.view, View::Queue);
        assert_eq!(h.app.queue.filter_text, "type:place_order");
        assert_eq!(h.selected_key(), "k-order");
        assert_eq!(h.app.queue.window.rows.len(), 1);
        assert_eq!(h.app.queue.count, Some(1));
    }

    #[test]
    fn an_error_with_spaces_is_quoted_and_an_age_says_why_it_cannot_filter() {
        let mut h = Harness::new();
        // Two receivers, three accounts, then the errors: none (2),
        // "fingerprint mismatch", "provider timeout".
        h.keys("5 j j j j j j j");
        let group = h.app.clusters.selected().unwrap();
        assert_eq!(group.value.as_deref(), Some("provider timeout"));
        h.keys("enter");
        assert_eq!(h.app.queue.filter_text, r#"err:"provider timeout""#);
        let said = h.app.status.clone().unwrap().text;
        assert!(said.contains("any attempt's error"), "{said}");
        assert_eq!(h.selected_key(), "k-order");

        h.keys("5 G enter");
        assert_eq!(h.app.view, View::Clusters, "an age group stays put");
        let status = h.app.status.clone().unwrap();
        assert!(
            status.error && status.text.contains("no age term"),
            "{status:?}"
        );
    }

    #[test]
    fn leaving_the_view_stops_its_grouping() {
        let mut h = Harness::new();
        let stops = |effects: &[Effect]| {
            effects
                .iter()
                .any(|e| matches!(e, Effect::Count(Count::StopGrouping)))
        };
        h.keys("5");
        assert!(stops(&h.keys("1")), "a view key leaves it");
        assert!(!stops(&h.keys("2")), "leaving another view stops nothing");
        h.keys("5");
        assert!(
            stops(&h.keys("enter")),
            "a group opened in the Queue leaves it"
        );
        assert_eq!(h.app.view, View::Queue);
    }

    #[test]
    fn the_grouping_is_reread_on_a_ledger_change_only_while_shown() {
        let mut h = Harness::new();
        let asked = |effects: &[Effect]| {
            effects
                .iter()
                .any(|e| matches!(e, Effect::Count(Count::Clusters { .. })))
        };
        let effects = h.receive(crate::app::Msg::LedgerChanged);
        assert!(!asked(&effects), "the Queue is shown: {effects:?}");
        h.keys("5");
        let effects = h.receive(crate::app::Msg::LedgerChanged);
        assert!(asked(&effects), "{effects:?}");
    }
}
