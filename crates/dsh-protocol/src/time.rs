//! Wall-clock times as people read them: UTC calendar dates of Unix times.
//!
//! dsh stores times as Unix milliseconds (every event's `time`); the places
//! that show one to a person (session lists, the freshness guard's messages,
//! `/rewind`, the system prompt's date) format it through [`Utc`], so there
//! is one calendar computation in the workspace and no date dependency.

/// A Unix time split into its UTC calendar date and time of day.
///
/// Built by [`Utc::from_unix_ms`]; the fields are plain numbers, so callers
/// format them as they need. Display gives `YYYY-MM-DD HH:MM:SS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Utc {
    /// The year (proleptic Gregorian).
    pub year: i64,
    /// The month, 1–12.
    pub month: u32,
    /// The day of the month, 1–31.
    pub day: u32,
    /// The hour, 0–23.
    pub hour: u32,
    /// The minute, 0–59.
    pub minute: u32,
    /// The second, 0–59 (leap seconds do not exist in Unix time).
    pub second: u32,
}

impl Utc {
    /// The UTC date and time of `ms` milliseconds after 1970-01-01 00:00:00.
    /// Total: every `u64` maps to a date (far-future years are just large).
    pub fn from_unix_ms(ms: u64) -> Utc {
        let secs = ms / 1000;
        let days = i64::try_from(secs / 86_400).unwrap_or(i64::MAX / 2);
        let rem = secs % 86_400;
        let (year, month, day) = civil_from_days(days);
        // `rem` < 86,400, so these fit.
        let rem = rem as u32;
        Utc {
            year,
            month,
            day,
            hour: rem / 3600,
            minute: rem % 3600 / 60,
            second: rem % 60,
        }
    }

    /// Now, from the system clock (the epoch when the clock is before it).
    pub fn now() -> Utc {
        let ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        Utc::from_unix_ms(ms)
    }

    /// `YYYY-MM-DD`.
    pub fn date(&self) -> String {
        format!("{:04}-{:02}-{:02}", self.year, self.month, self.day)
    }

    /// `YYYY-MM-DD HH:MM` (no seconds).
    pub fn minutes(&self) -> String {
        format!("{} {:02}:{:02}", self.date(), self.hour, self.minute)
    }
}

impl std::fmt::Display for Utc {
    /// `YYYY-MM-DD HH:MM:SS`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {:02}:{:02}:{:02}",
            self.date(),
            self.hour,
            self.minute,
            self.second
        )
    }
}

/// The calendar date `(year, month, day)` of `days` since 1970-01-01
/// (Howard Hinnant's `civil_from_days`, exact for the whole `i64` range the
/// arithmetic does not overflow, which covers any Unix time in `u64` ms).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    // Both are small positive numbers by construction.
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants_format_as_utc() {
        assert_eq!(Utc::from_unix_ms(0).to_string(), "1970-01-01 00:00:00");
        assert_eq!(
            Utc::from_unix_ms(1_700_000_000_123).to_string(),
            "2023-11-14 22:13:20"
        );
        assert_eq!(
            Utc::from_unix_ms(951_782_400_000).to_string(),
            "2000-02-29 00:00:00"
        );
        assert_eq!(
            Utc::from_unix_ms(1_796_317_788_979).minutes(),
            "2026-12-03 17:09"
        );
        assert_eq!(Utc::from_unix_ms(1_796_317_788_979).date(), "2026-12-03");
    }

    #[test]
    fn month_ends_and_leap_years_roll_over() {
        // 2024-02-28 23:59:59, +1 s, then 2024-02-29 23:59:59 +1 s.
        let feb28 = 1_709_164_799_000;
        assert_eq!(Utc::from_unix_ms(feb28).date(), "2024-02-28");
        assert_eq!(Utc::from_unix_ms(feb28 + 1000).date(), "2024-02-29");
        assert_eq!(Utc::from_unix_ms(feb28 + 86_401_000).date(), "2024-03-01");
        // 2100 is not a leap year.
        assert_eq!(Utc::from_unix_ms(4_107_542_400_000).date(), "2100-03-01");
        assert!(Utc::from_unix_ms(u64::MAX).year > 500_000_000);
    }

    /// Walking day by day from the epoch, the date advances by exactly one
    /// calendar day each time (checked against a month-length table).
    #[test]
    fn every_day_of_four_centuries_follows_the_last() {
        let (mut y, mut m, mut d) = (1970i64, 1u32, 1u32);
        for days in 0..146_097i64 {
            assert_eq!(civil_from_days(days), (y, m, d), "day {days}");
            let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
            let len = match m {
                2 if leap => 29,
                2 => 28,
                4 | 6 | 9 | 11 => 30,
                _ => 31,
            };
            d += 1;
            if d > len {
                d = 1;
                m += 1;
                if m > 12 {
                    m = 1;
                    y += 1;
                }
            }
        }
    }
}
