// Sunrise and sunset from the standard sunrise equation (accurate to a minute or two), so the
// generated weather has plausible sun times for any place and date.

const RAD = Math.PI / 180
const J2000 = 2451545.0
const UNIX_EPOCH_JD = 2440587.5

/** Sunrise and sunset (epoch seconds) on the given UTC calendar day at a place; polar day/night clamp to the day's ends. */
export function sunTimes(
  date: string,
  latitude: number,
  longitude: number,
): { sunrise: number; sunset: number } {
  const midnightJd = Date.parse(`${date}T00:00:00Z`) / 86_400_000 + UNIX_EPOCH_JD
  const n = Math.ceil(midnightJd - J2000 + 0.0008)
  const meanSolarTime = n - longitude / 360
  const anomaly = (357.5291 + 0.98560028 * meanSolarTime) % 360
  const center =
    1.9148 * Math.sin(anomaly * RAD) +
    0.02 * Math.sin(2 * anomaly * RAD) +
    0.0003 * Math.sin(3 * anomaly * RAD)
  const eclipticLongitude = (anomaly + center + 180 + 102.9372) % 360
  const transit =
    J2000 +
    meanSolarTime +
    0.0053 * Math.sin(anomaly * RAD) -
    0.0069 * Math.sin(2 * eclipticLongitude * RAD)
  const declination = Math.asin(Math.sin(eclipticLongitude * RAD) * Math.sin(23.4397 * RAD))
  const cosHourAngle =
    (Math.sin(-0.833 * RAD) - Math.sin(latitude * RAD) * Math.sin(declination)) /
    (Math.cos(latitude * RAD) * Math.cos(declination))
  const hourAngle = Math.acos(Math.min(1, Math.max(-1, cosHourAngle))) / RAD
  const toEpoch = (jd: number) => Math.round((jd - UNIX_EPOCH_JD) * 86_400)
  return { sunrise: toEpoch(transit - hourAngle / 360), sunset: toEpoch(transit + hourAngle / 360) }
}
