import { z } from 'zod'
import { dateTimeParam, decimalParam, enumParam, textParam } from './params.ts'
import type { CatalogEntry, EndpointVariant, ParamIssue } from './types.ts'

export const UNITS_OF_MEASURE = ['metric', 'imperial'] as const
const ADDRESS_PARAMS = ['area', 'state', 'country'] as const
const COORDINATE_PARAMS = ['latitude', 'longitude'] as const

export type WeatherVariantName =
  'current-by-address' | 'forecast-by-address' | 'forecast-by-geo-location'

export const weatherVariants: readonly EndpointVariant[] = [
  {
    name: 'current-by-address',
    description: 'Current weather at an address',
    params: ['area', 'state', 'country', 'unitOfMeasure'],
    example: { area: 'Ruiru', state: 'Kiambu', country: 'Kenya', unitOfMeasure: 'metric' },
  },
  {
    name: 'forecast-by-address',
    description: 'Forecast for an address at a date and time',
    params: ['area', 'state', 'country', 'dateTime', 'unitOfMeasure'],
    example: {
      area: 'London',
      state: 'England',
      country: 'United Kingdom',
      dateTime: '2024-08-16T19:00:00',
      unitOfMeasure: 'imperial',
    },
  },
  {
    name: 'forecast-by-geo-location',
    description: 'Forecast for a latitude/longitude at a date and time',
    params: ['latitude', 'longitude', 'dateTime', 'unitOfMeasure'],
    example: {
      latitude: '40.4168',
      longitude: '-3.7038',
      dateTime: '2024-08-17T12:00:00',
      unitOfMeasure: 'metric',
    },
  },
]

/** Which of the three parameter sets a (valid) weather query uses. */
export function weatherVariant(
  params: Readonly<Record<string, string | undefined>>,
): WeatherVariantName {
  if (params.latitude !== undefined || params.longitude !== undefined)
    return 'forecast-by-geo-location'
  return params.dateTime !== undefined ? 'forecast-by-address' : 'current-by-address'
}

/**
 * The variant rules FEEDS.md leaves implicit: a location is either an address (area, state and
 * country) or coordinates (latitude and longitude, forecast only); both at once is ambiguous.
 */
function checkWeatherVariant(params: Readonly<Record<string, string>>): ParamIssue[] {
  const addressGiven = ADDRESS_PARAMS.filter((name) => params[name] !== undefined)
  const coordinatesGiven = COORDINATE_PARAMS.filter((name) => params[name] !== undefined)
  if (addressGiven.length > 0 && coordinatesGiven.length > 0) {
    return [
      {
        param: coordinatesGiven[0]!,
        message: `is ambiguous together with ${addressGiven.join(', ')}: pass either area/state/country or latitude/longitude`,
      },
    ]
  }
  if (coordinatesGiven.length > 0) {
    const issues: ParamIssue[] = COORDINATE_PARAMS.filter((name) => params[name] === undefined).map(
      (name) => ({ param: name, message: 'is required with latitude/longitude' }),
    )
    if (params.dateTime === undefined)
      issues.push({
        param: 'dateTime',
        message: 'is required for a forecast by latitude/longitude',
      })
    return issues
  }
  return ADDRESS_PARAMS.filter((name) => params[name] === undefined).map((name) => ({
    param: name,
    message: 'is required (or pass latitude, longitude and dateTime)',
  }))
}

const reading = z.number()
const optionalReading = z.number().nullable()

export const weather: CatalogEntry = {
  name: 'weather',
  family: 'weather',
  path: '/api/v1/weather',
  description: 'Current weather or forecast for an address or a geo-location',
  params: {
    area: textParam({
      name: 'area',
      description: 'Town, city or administrative area',
      example: 'Ruiru',
      required: false,
    }),
    state: textParam({
      name: 'state',
      description: 'State, province or county',
      example: 'Kiambu',
      required: false,
    }),
    country: textParam({
      name: 'country',
      description: 'Country of the area',
      example: 'Kenya',
      required: false,
    }),
    latitude: decimalParam(
      {
        name: 'latitude',
        description: 'Latitude in degrees, -90 to 90',
        example: '40.4168',
        required: false,
      },
      -90,
      90,
    ),
    longitude: decimalParam(
      {
        name: 'longitude',
        description: 'Longitude in degrees, -180 to 180',
        example: '-3.7038',
        required: false,
      },
      -180,
      180,
    ),
    dateTime: dateTimeParam({
      name: 'dateTime',
      description: 'Forecast date and time, YYYY-MM-DDTHH:mm:ss',
      example: '2024-08-17T12:00:00',
      required: false,
    }),
    unitOfMeasure: enumParam(
      {
        name: 'unitOfMeasure',
        description: 'metric or imperial (default metric)',
        example: 'metric',
        required: false,
        default: 'metric',
      },
      UNITS_OF_MEASURE,
    ),
  },
  refine: checkWeatherVariant,
  variants: weatherVariants,
  example: { area: 'Ruiru', state: 'Kiambu', country: 'Kenya', unitOfMeasure: 'metric' },
  identity: ['area', 'state', 'country', 'latitude', 'longitude', 'dateTime', 'unitOfMeasure'],
  data: z.looseObject({
    temperature: reading,
    precProbability: reading,
    precipitation: reading,
    feelsLike: reading,
    high: optionalReading,
    low: optionalReading,
    twentyFourHourRain: optionalReading,
    visibility: reading,
    cloudCover: reading,
    humidity: reading,
    windSpeed: reading,
    windGust: optionalReading,
    windDir: reading,
    snow: reading,
    solarRadiation: reading,
    solarEnergy: reading,
    uvIndex: reading,
    pressure: reading,
    sunset: reading,
    sunrise: reading,
  }),
  // Field table camelCase first; the sample response's lowercase forms after.
  aliases: {
    windGust: ['windgust'],
    windDir: ['winddir'],
    solarRadiation: ['solarradiation'],
    solarEnergy: ['solarenergy'],
    uvIndex: ['uvindex'],
    windSpeed: ['windspeed'],
  },
  defaultResultPath: 'temperature',
  providerFlags: false,
  hasLastUpdated: false,
}
