import { createHash } from 'node:crypto'
import { weatherVariant, type ValidatedParams } from '../catalog/index.ts'
import type { Answer } from './answer.ts'
import type { City, WeatherRanges } from './data/index.ts'
import { FeedServiceError } from './errors.ts'
import { normaliseName } from './match.ts'
import { sunTimes } from './sun.ts'

// Readings are synthetic but deterministic: every value is derived from a hash of the location
// and the time asked for, so two oracle nodes asking the same question get the same answer.
// Imperial answers are conversions of the metric ones, so both describe the same weather.

interface Place {
  label: string
  /** Identifies the place in the seed. */
  key: string
  latitude: number
  longitude: number
  /** Hours from UTC of the place's local time. */
  tzoffset: number
}

function findCity(cities: readonly City[], params: ValidatedParams): Place {
  const [area, state, country] = [params.area!, params.state!, params.country!].map(normaliseName)
  const city = cities.find(
    (candidate) =>
      normaliseName(candidate.area) === area &&
      normaliseName(candidate.state) === state &&
      normaliseName(candidate.country) === country,
  )
  if (!city)
    throw new FeedServiceError(
      404,
      `no weather for area ${params.area}, state ${params.state}, country ${params.country}: unknown address`,
    )
  return {
    label: `${city.area}, ${city.state}, ${city.country}`,
    key: `${area}|${state}|${country}`,
    latitude: city.latitude,
    longitude: city.longitude,
    tzoffset: city.tzoffset,
  }
}

function coordinatePlace(params: ValidatedParams): Place {
  const latitude = Number(params.latitude)
  const longitude = Number(params.longitude)
  return {
    label: `${latitude}, ${longitude}`,
    key: `${latitude.toFixed(4)},${longitude.toFixed(4)}`,
    latitude,
    longitude,
    tzoffset: Math.round(longitude / 15),
  }
}

/** A number in [0, 1) derived from the seed and the field name. */
function unit(seed: string, field: string): number {
  return createHash('sha256').update(`${seed}|${field}`).digest().readUInt32BE(0) / 2 ** 32
}

const clamp = (value: number, [min, max]: readonly [number, number]) =>
  Math.min(max, Math.max(min, value))
const round = (value: number, digits = 1) => Number(value.toFixed(digits))

function dayOfYear(date: string): number {
  return (
    (Date.parse(`${date}T00:00:00Z`) - Date.parse(`${date.slice(0, 4)}-01-01T00:00:00Z`)) /
      86_400_000 +
    1
  )
}

/** Sine of the sun's elevation (0 when below the horizon) at a local hour: drives radiation and UV. */
function sunElevationSine(place: Place, localDate: string, localHour: number): number {
  const declination =
    -23.44 * Math.cos((2 * Math.PI * (dayOfYear(localDate) + 10)) / 365) * (Math.PI / 180)
  const solarHour = localHour - place.tzoffset + place.longitude / 15
  const hourAngle = ((solarHour - 12) * 15 * Math.PI) / 180
  const latitude = (place.latitude * Math.PI) / 180
  return Math.max(
    0,
    Math.sin(latitude) * Math.sin(declination) +
      Math.cos(latitude) * Math.cos(declination) * Math.cos(hourAngle),
  )
}

/** Metric readings for a place at a local date and hour. */
function metricReadings(
  place: Place,
  localDate: string,
  localHour: number,
  seed: string,
  ranges: WeatherRanges['metric'],
) {
  const u = (field: string) => unit(seed, field)
  // The day's own values (its mean, high and low) depend on the place and date only.
  const daySeed = `${place.key}|${localDate}`
  const absLatitude = Math.abs(place.latitude)
  const season =
    Math.cos((2 * Math.PI * (dayOfYear(localDate) - 196)) / 365) * Math.sign(place.latitude || 1)
  const daily = 4 * Math.cos((2 * Math.PI * (localHour - 15)) / 24)
  const dayMean =
    27 -
    0.35 * absLatitude +
    season * Math.min(12, absLatitude * 0.22) +
    (unit(daySeed, 'temp') - 0.5) * 6
  const high = clamp(dayMean + 4 + unit(daySeed, 'high') * 2, ranges.temp_C)
  const low = clamp(dayMean - 4 - unit(daySeed, 'low') * 2, ranges.temp_C)
  const temperature = clamp(dayMean + daily + (u('temp') - 0.5) * 2, [low, high])
  const cloudCover = clamp(u('cloud') * 100, ranges.cloudcover_pct)
  const precProbability = clamp(Math.round(u('precprob') * cloudCover), ranges.precipprob_pct)
  const precipitation =
    precProbability < 40
      ? 0
      : clamp(u('precip') ** 2 * (precProbability / 100) * 30, ranges.precip_mm)
  const windSpeed = clamp(u('wind') ** 2 * 45, ranges.windspeed_kmh)
  const sun = sunTimes(localDate, place.latitude, place.longitude)
  const solarRadiation = clamp(
    sunElevationSine(place, localDate, localHour) * 1000 * (1 - cloudCover / 150),
    [0, 1000],
  )
  return {
    temperature: round(temperature),
    feelsLike: round(
      clamp(temperature + (u('feels') - 0.5) * 10, [temperature - 5, temperature + 5]),
    ),
    high: round(high),
    low: round(low),
    precProbability,
    precipitation: round(precipitation),
    twentyFourHourRain: round(clamp(precipitation * (1 + u('rain24')), ranges.precip_mm)),
    humidity: round(clamp(30 + u('humidity') * 40 + precProbability * 0.3, ranges.humidity_pct)),
    cloudCover: round(cloudCover),
    visibility: round(
      clamp(24.1 - precipitation * 0.8 - u('visibility') * 6, ranges.visibility_km),
    ),
    windSpeed: round(windSpeed),
    windGust: round(Math.min(120, windSpeed + u('gust') * (windSpeed + 20))),
    windDir: Math.round(clamp(u('winddir') * 360, ranges.winddir_deg)),
    snow: temperature < 1 ? round(clamp(u('snow') * precipitation, ranges.snow_cm)) : 0,
    solarRadiation: round(solarRadiation),
    solarEnergy: round(solarRadiation * 0.0036, 2),
    uvIndex: Math.round(clamp(solarRadiation / 100, ranges.uvindex)),
    pressure: round(clamp(1010 + (u('pressure') - 0.5) * 50, ranges.pressure_mb)),
    sunrise: sun.sunrise,
    sunset: sun.sunset,
  }
}

type Readings = ReturnType<typeof metricReadings>

/** The same weather in the `us` unit group: Fahrenheit, inches, miles per hour, miles. */
function toImperial(metric: Readings): Readings {
  const fahrenheit = (celsius: number) => round(celsius * 1.8 + 32)
  const inches = (millimetres: number) => round(millimetres / 25.4, 2)
  const miles = (kilometres: number) => round(kilometres / 1.609344)
  return {
    ...metric,
    temperature: fahrenheit(metric.temperature),
    feelsLike: fahrenheit(metric.feelsLike),
    high: fahrenheit(metric.high),
    low: fahrenheit(metric.low),
    precipitation: inches(metric.precipitation),
    twentyFourHourRain: inches(metric.twentyFourHourRain),
    snow: round(metric.snow / 2.54, 2),
    visibility: miles(metric.visibility),
    windSpeed: miles(metric.windSpeed),
    windGust: miles(metric.windGust),
  }
}

export function weatherAnswer(
  cities: readonly City[],
  ranges: WeatherRanges,
  params: ValidatedParams,
  now: number,
): Answer {
  const variant = weatherVariant(params)
  const place =
    variant === 'forecast-by-geo-location' ? coordinatePlace(params) : findCity(cities, params)
  let localDate: string
  let localHour: number
  let timeKey: string
  if (params.dateTime !== undefined) {
    localDate = params.dateTime.slice(0, 10)
    localHour = Number(params.dateTime.slice(11, 13))
    timeKey = params.dateTime
  } else {
    // Current weather changes once an hour: every node asking within the same hour agrees.
    const local = new Date(Math.floor(now / 3_600_000) * 3_600_000 + place.tzoffset * 3_600_000)
    localDate = local.toISOString().slice(0, 10)
    localHour = local.getUTCHours()
    timeKey = `current:${local.toISOString().slice(0, 13)}`
  }
  const metric = metricReadings(
    place,
    localDate,
    localHour,
    `${place.key}|${timeKey}`,
    ranges.metric,
  )
  const readings = params.unitOfMeasure === 'imperial' ? toImperial(metric) : metric
  const what =
    variant === 'current-by-address' ? 'Current weather' : `Forecast for ${params.dateTime}`
  return {
    description: `${what} at ${place.label} (${params.unitOfMeasure})`,
    data: {
      ...readings,
      // The sample response carries these lowercase twins and echoes the unit.
      windgust: readings.windGust,
      winddir: readings.windDir,
      windspeed: readings.windSpeed,
      solarradiation: readings.solarRadiation,
      solarenergy: readings.solarEnergy,
      uvindex: readings.uvIndex,
      unitOfMeasure: params.unitOfMeasure,
    },
  }
}
